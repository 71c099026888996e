//! The data plane end to end: chunks encoded to Flight messages and back, and served by a
//! worker's Flight service on 127.0.0.1 to a client.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod flight;
mod samples;
mod wire;
