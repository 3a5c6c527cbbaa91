//! Gin's `c.Keys`: the values handlers pass down the chain, by name
//! ([`Context::set`](crate::web::chain::Context::set) and
//! [`get`](crate::web::chain::Context::get)).
//!
//! A request stores few values, so a list searched in order serves as
//! Gin's map.

use std::any::Any;

/// The keys of one request: each name once, with a value of any type.
#[derive(Default)]
pub(crate) struct Keys(Vec<(&'static str, Box<dyn Any + Send + Sync>)>);

impl Keys {
    /// Store `value` under `key`, replacing what was there (of any type).
    pub(crate) fn set<V: Any + Send + Sync>(&mut self, key: &'static str, value: V) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = Box::new(value),
            None => self.0.push((key, Box::new(value))),
        }
    }

    /// The value under `key`, if it has type `V`.
    pub(crate) fn get<V: Any>(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| *k == key)?.1.downcast_ref()
    }

    /// Remove `key` and its value, if it was set (Gin's `c.Delete`).
    pub(crate) fn delete(&mut self, key: &str) {
        self.0.retain(|(k, _)| *k != key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_boxed_values_are_read_back_by_their_type_and_replaced_by_key() {
        let mut keys = Keys::default();
        assert_eq!(keys.get::<&str>("a"), None, "nothing stored yet");
        keys.set("a", "text");
        keys.set("b", 7u32);
        keys.set("c", String::from("owned"));
        assert_eq!(keys.get::<&str>("a"), Some(&"text"));
        assert_eq!(keys.get::<String>("a"), None, "another type is None");
        assert_eq!(keys.get::<u32>("b"), Some(&7));
        assert_eq!(keys.get::<u64>("b"), None);
        assert_eq!(keys.get::<String>("c").map(String::as_str), Some("owned"));
        // Replacing changes the value and may change its type.
        keys.set("a", 1u8);
        keys.set("b", "now text");
        assert_eq!(keys.get::<&str>("a"), None);
        assert_eq!(keys.get::<u8>("a"), Some(&1));
        assert_eq!(keys.get::<&str>("b"), Some(&"now text"));
        assert_eq!(keys.0.len(), 3, "a replaced key is not stored twice");
    }

    #[test]
    fn a_deleted_key_is_gone_and_the_others_stay() {
        let mut keys = Keys::default();
        keys.set("a", 1u8);
        keys.set("b", 2u8);
        keys.delete("a");
        keys.delete("never set");
        assert_eq!(keys.get::<u8>("a"), None);
        assert_eq!(keys.get::<u8>("b"), Some(&2));
        keys.set("a", 3u8);
        assert_eq!(
            keys.get::<u8>("a"),
            Some(&3),
            "a deleted key can be set again"
        );
    }
}
