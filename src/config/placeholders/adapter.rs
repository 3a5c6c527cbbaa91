//! The see-through deserializer: serde_yaml's deserializer and each
//! field's visitor wrapped, so that every scalar holding `${` is resolved
//! (or, in the shape pass, stood in for) before the field sees it, in the
//! type the field asked for. Everything else is handed on unchanged, and
//! serde_yaml still pins each error to its key, line and column.

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

use super::{from_sources, quote, Context, Expanded, Step};

/// The type a field asked for, as far as a placeholder cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Text, or whatever the document holds (`deserialize_any`).
    Text,
    Bool,
    Int,
    Float,
    /// A mapping key: never resolved, remembered for the key path.
    Key,
}

/// serde_yaml's deserializer, seen through: placeholders are resolved in
/// every value below it.
pub(super) struct Resolving<'c, D> {
    pub(super) de: D,
    pub(super) cx: &'c Context<'c>,
    pub(super) key: bool,
}

impl<'c, D> Resolving<'c, D> {
    fn wrap<V>(&self, visitor: V, want: Want) -> Wrap<'c, V> {
        let want = if self.key { Want::Key } else { want };
        Wrap {
            visitor,
            cx: self.cx,
            want,
        }
    }
}

/// A deserializer method handed on with its visitor wrapped.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*) => $want:ident;)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            let wrapped = self.wrap(visitor, Want::$want);
            self.de.$method($($arg,)* wrapped)
        }
    )*};
}

/// A typed scalar read through `deserialize_any`, so that a placeholder
/// reaches the wrapper as text (serde_yaml refuses text asked for as a
/// number before a visitor sees it); a literal value is visited as before.
macro_rules! scalar {
    ($($method:ident => $want:ident;)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            if self.key {
                let wrapped = self.wrap(visitor, Want::Key);
                return self.de.$method(wrapped);
            }
            let wrapped = self.wrap(visitor, Want::$want);
            self.de.deserialize_any(wrapped)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Resolving<'_, D> {
    type Error = D::Error;

    scalar! {
        deserialize_bool => Bool;
        deserialize_i8 => Int; deserialize_i16 => Int; deserialize_i32 => Int;
        deserialize_i64 => Int; deserialize_i128 => Int;
        deserialize_u8 => Int; deserialize_u16 => Int; deserialize_u32 => Int;
        deserialize_u64 => Int; deserialize_u128 => Int;
        deserialize_f32 => Float; deserialize_f64 => Float;
    }

    forward! {
        deserialize_any() => Text;
        deserialize_char() => Text;
        deserialize_str() => Text;
        deserialize_string() => Text;
        deserialize_bytes() => Text;
        deserialize_byte_buf() => Text;
        deserialize_option() => Text;
        deserialize_unit() => Text;
        deserialize_unit_struct(name: &'static str) => Text;
        deserialize_newtype_struct(name: &'static str) => Text;
        deserialize_seq() => Text;
        deserialize_tuple(len: usize) => Text;
        deserialize_tuple_struct(name: &'static str, len: usize) => Text;
        deserialize_map() => Text;
        deserialize_struct(name: &'static str, fields: &'static [&'static str]) => Text;
        deserialize_enum(name: &'static str, variants: &'static [&'static str]) => Text;
        deserialize_identifier() => Text;
        deserialize_ignored_any() => Text;
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// A field's visitor, seen through: text holding `${` is resolved first.
struct Wrap<'c, V> {
    visitor: V,
    cx: &'c Context<'c>,
    want: Want,
}

/// A visitor method handed on unchanged (a key's value noted first).
macro_rules! pass {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            if self.want == Want::Key {
                self.cx.key.replace(Some(v.to_string()));
            }
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.visitor.expecting(f)
    }

    pass! {
        visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64);
        visit_i128(i128); visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64);
        visit_u128(u128); visit_f32(f32); visit_f64(f64); visit_char(char);
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        match self.want {
            Want::Key => {
                self.cx.key.replace(Some(v.to_string()));
                self.visitor.visit_str(v)
            }
            _ if v.contains("${") => self.placeholder(v),
            _ => self.visitor.visit_str(v),
        }
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        match self.want {
            Want::Key => {
                self.cx.key.replace(Some(v.to_string()));
                self.visitor.visit_borrowed_str(v)
            }
            _ if v.contains("${") => self.placeholder(v),
            _ => self.visitor.visit_borrowed_str(v),
        }
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        match self.want {
            Want::Key => {
                self.cx.key.replace(Some(v.clone()));
                self.visitor.visit_string(v)
            }
            _ if v.contains("${") => self.placeholder(&v),
            _ => self.visitor.visit_string(v),
        }
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<V::Value, E> {
        self.visitor.visit_bytes(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<V::Value, E> {
        self.visitor.visit_byte_buf(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        let key = self.want == Want::Key;
        self.visitor.visit_some(Resolving {
            de,
            cx: self.cx,
            key,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        let key = self.want == Want::Key;
        self.visitor.visit_newtype_struct(Resolving {
            de,
            cx: self.cx,
            key,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(Seq {
            seq,
            cx: self.cx,
            index: 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Map { map, cx: self.cx })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        let key = self.want == Want::Key;
        self.visitor.visit_enum(Enum {
            data,
            cx: self.cx,
            key,
        })
    }
}

impl<'de, V: Visitor<'de>> Wrap<'_, V> {
    /// Resolves `text` and hands it to the field in the type it asked for.
    fn placeholder<E: de::Error>(self, text: &str) -> Result<V::Value, E> {
        let expanded = self.cx.expand(text).map_err(E::custom)?;
        let Some(Expanded { text, sources }) = expanded else {
            return self.stand_in();
        };
        // A value read from elsewhere is named by where it came from: it
        // may be a secret (a password, or a key holding one).
        let key = self.cx.key_path();
        let shown = match sources.is_empty() {
            true => quote(&text),
            false => {
                let shown = from_sources(&sources);
                self.cx.origins.borrow_mut().sources.insert(key, sources);
                shown
            }
        };
        let expected = (&self.visitor as &dyn de::Expected).to_string();
        let refuse = || E::custom(format!("invalid value {shown}: expected {expected}"));
        let result = match self.want {
            Want::Text | Want::Key => self.visitor.visit_string(text.clone()),
            Want::Bool => match text.as_str() {
                "true" => self.visitor.visit_bool(true),
                "false" => self.visitor.visit_bool(false),
                _ => return Err(refuse()),
            },
            Want::Int => match (text.parse::<u64>(), text.parse::<i64>()) {
                (Ok(n), _) => self.visitor.visit_u64(n),
                (_, Ok(n)) => self.visitor.visit_i64(n),
                _ => return Err(refuse()),
            },
            Want::Float => match text.parse::<f64>() {
                Ok(x) => self.visitor.visit_f64(x),
                Err(_) => return Err(refuse()),
            },
        };
        // The field's own message may quote the value: it shows `shown`
        // instead, or, where the value still shows, the key's type only.
        result.map_err(|e: E| {
            let message = e
                .to_string()
                .replace(&format!("{text:?}"), &shown)
                .replace(&quote(&text), &shown);
            let head = text
                .char_indices()
                .nth(8)
                .map_or(&text[..], |(at, _)| &text[..at]);
            match head.is_empty() || !message.contains(head) {
                true => E::custom(message),
                false => refuse(),
            }
        })
    }

    /// The shape pass's stand-in for a placeholder: a neutral value of the
    /// type the field asks for.
    fn stand_in<E: de::Error>(self) -> Result<V::Value, E> {
        let result = match self.want {
            Want::Text | Want::Key => self.visitor.visit_str("0"),
            Want::Bool => self.visitor.visit_bool(false),
            Want::Int => self.visitor.visit_u64(1),
            Want::Float => self.visitor.visit_f64(1.0),
        };
        if result.is_err() {
            self.cx.stand_in_failed.set(true);
        }
        result
    }
}

/// A seed whose deserializer is seen through.
struct Seed<'c, S> {
    seed: S,
    cx: &'c Context<'c>,
    key: bool,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Resolving {
            de,
            cx: self.cx,
            key: self.key,
        })
    }
}

/// A mapping's entries, each value read under its key in the path.
struct Map<'c, A> {
    map: A,
    cx: &'c Context<'c>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let cx = self.cx;
        self.map.next_key_seed(Seed {
            seed,
            cx,
            key: true,
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let cx = self.cx;
        let key = cx.key.take().unwrap_or_else(|| "?".to_string());
        cx.path.borrow_mut().push(Step::Key(key));
        let value = self.map.next_value_seed(Seed {
            seed,
            cx,
            key: false,
        });
        cx.path.borrow_mut().pop();
        value
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A sequence's elements, each read under its index in the path.
struct Seq<'c, A> {
    seq: A,
    cx: &'c Context<'c>,
    index: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        let cx = self.cx;
        cx.path.borrow_mut().push(Step::Index(self.index));
        self.index += 1;
        let element = self.seq.next_element_seed(Seed {
            seed,
            cx,
            key: false,
        });
        cx.path.borrow_mut().pop();
        element
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

/// An enum's variant name and content, seen through.
struct Enum<'c, A> {
    data: A,
    cx: &'c Context<'c>,
    key: bool,
}

impl<'de, 'c, A: EnumAccess<'de>> EnumAccess<'de> for Enum<'c, A> {
    type Error = A::Error;
    type Variant = Variant<'c, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let (cx, key) = (self.cx, self.key);
        let (value, variant) = self.data.variant_seed(Seed { seed, cx, key })?;
        Ok((value, Variant { variant, cx }))
    }
}

struct Variant<'c, A> {
    variant: A,
    cx: &'c Context<'c>,
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.variant.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        let cx = self.cx;
        self.variant.newtype_variant_seed(Seed {
            seed,
            cx,
            key: false,
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        let cx = self.cx;
        let want = Want::Text;
        self.variant.tuple_variant(len, Wrap { visitor, cx, want })
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        let cx = self.cx;
        let want = Want::Text;
        self.variant
            .struct_variant(fields, Wrap { visitor, cx, want })
    }
}
