//! handwire

pub mod router;
