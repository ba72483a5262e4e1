//! nrt-linux: placeholder until its issue lands.
