//! weir-engine (being written)
