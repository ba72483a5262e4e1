//! Test platform.
