//! Gin's `c.Keys`: the values handlers pass down the chain, by name
//! ([`Context::set`](crate::web::chain::Context::set) and
//! [`get`](crate::web::chain::Context::get)).
//!
//! A request stores few values, often none, and most are known text (the
//! router-demo's global middleware stores a `&'static str`, as Gin's
//! tutorial does). So the first entry is held in the context itself, a
//! `&'static str` is held as it is, and only other values, or entries past
//! the first, take an allocation: storing and dropping a boxed value in a
//! grown list was about 450 instructions of a `GET /hello`.

use std::any::Any;

/// The keys of one request.
#[derive(Default)]
pub(crate) struct Keys {
    first: Option<Entry>,
    more: Vec<Entry>,
}

struct Entry {
    key: &'static str,
    value: Value,
}

/// A stored value: known text as it is, anything else boxed.
enum Value {
    Text(&'static str),
    Boxed(Box<dyn Any + Send + Sync>),
}

impl Value {
    fn new<V: Any + Send + Sync>(value: V) -> Value {
        match (&value as &dyn Any).downcast_ref::<&'static str>() {
            Some(text) => Value::Text(text),
            None => Value::Boxed(Box::new(value)),
        }
    }

    fn get<V: Any>(&self) -> Option<&V> {
        match self {
            Value::Text(text) => (text as &dyn Any).downcast_ref::<V>(),
            Value::Boxed(value) => value.downcast_ref::<V>(),
        }
    }
}

impl Keys {
    /// Store `value` under `key`, replacing what was there (of any type).
    pub(crate) fn set<V: Any + Send + Sync>(&mut self, key: &'static str, value: V) {
        let value = Value::new(value);
        if let Some(entry) = self.entry_mut(key) {
            entry.value = value;
        } else if self.first.is_none() {
            self.first = Some(Entry { key, value });
        } else {
            self.more.push(Entry { key, value });
        }
    }

    /// The value under `key`, if it has type `V`.
    pub(crate) fn get<V: Any>(&self, key: &str) -> Option<&V> {
        self.first
            .iter()
            .chain(&self.more)
            .find(|e| e.key == key)
            .and_then(|e| e.value.get::<V>())
    }

    fn entry_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.first
            .iter_mut()
            .chain(&mut self.more)
            .find(|e| e.key == key)
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
        // Replacing changes the value and may change its type, in either
        // the inline entry or the list.
        keys.set("a", 1u8);
        keys.set("b", "now text");
        assert_eq!(keys.get::<&str>("a"), None);
        assert_eq!(keys.get::<u8>("a"), Some(&1));
        assert_eq!(keys.get::<&str>("b"), Some(&"now text"));
        assert_eq!(keys.more.len(), 2, "a replaced key is not stored twice");
    }

    #[test]
    fn only_a_boxed_value_or_a_second_key_allocates() {
        let mut keys = Keys::default();
        keys.set("middle", "value");
        assert!(matches!(
            keys.first,
            Some(Entry {
                value: Value::Text("value"),
                ..
            })
        ));
        assert_eq!(keys.more.capacity(), 0, "one text value: no allocation");
        keys.set("n", 5u32);
        assert!(matches!(keys.more[0].value, Value::Boxed(_)));
    }
}
