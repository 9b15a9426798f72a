//! weir-gen (being written)
