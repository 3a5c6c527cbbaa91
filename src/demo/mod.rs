//! Area B placeholder
