//! nrt-sim: placeholder until its issue lands.
