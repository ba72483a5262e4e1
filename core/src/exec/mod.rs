//! The harvest.
