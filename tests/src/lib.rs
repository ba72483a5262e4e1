//! nrt-tests: placeholder until its issue lands.
