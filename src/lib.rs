//! handwire
