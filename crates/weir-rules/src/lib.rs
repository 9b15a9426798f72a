//! weir-rules (being written)
