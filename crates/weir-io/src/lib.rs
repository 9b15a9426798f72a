//! weir-io (being written)
