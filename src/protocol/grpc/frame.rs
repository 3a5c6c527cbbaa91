//! The gRPC length-prefixed message frame, and a decoder that cuts frames out
//! of an HTTP/2 DATA stream.
//!
//! Every gRPC message on the wire is
//!
//! ```text
//! +------------+---------------------------+-----------------+
//! | flag (u8)  | length (u32, big-endian)  | message bytes   |
//! +------------+---------------------------+-----------------+
//! ```
//!
//! where `flag` is 0 (plain) or 1 (compressed with the call's `grpc-encoding`).
//! DATA frames of HTTP/2 do not line up with messages: one message may span
//! many DATA frames and one DATA frame may hold several messages. Decoding is
//! therefore two-phase, as in mini-redis: [`Frame::check`] looks at the buffered
//! bytes and says whether a whole frame is there (or rejects it from its header
//! alone), and only then [`Frame::parse`] splits it off. A message announced as
//! larger than the limit is refused as soon as its 5-byte header arrives, so
//! the decoder never buffers more than one limit's worth of bytes.

use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Length of the prefix before every message.
pub const HEADER_LEN: usize = 5;

/// The default receive limit, as in grpc-go and tonic: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// One length-prefixed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The compressed flag of the prefix.
    pub compressed: bool,
    /// The message bytes (still compressed when `compressed` is set).
    pub message: Bytes,
}

/// Why bytes on the wire are not a valid frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The prefix announces a message above the receive limit.
    TooLarge { len: usize, max: usize },
    /// The flag byte is neither 0 nor 1.
    BadFlag(u8),
    /// The stream ended in the middle of a frame.
    Truncated { have: usize, want: usize },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge { len, max } => {
                write!(f, "received message larger than max ({len} vs. {max})")
            }
            FrameError::BadFlag(flag) => {
                write!(
                    f,
                    "invalid compressed flag {flag} in message prefix (expected 0 or 1)"
                )
            }
            FrameError::Truncated { have, want } => write!(
                f,
                "request stream ended inside a message: got {have} of {want} bytes"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

impl Frame {
    /// Phase one: is there a whole frame at the start of `buf`?
    ///
    /// Returns `Ok(Some(total_len))` (prefix included) when there is,
    /// `Ok(None)` when more bytes are needed, and an error as soon as the
    /// prefix alone shows the frame is unacceptable.
    pub fn check(buf: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let flag = buf[0];
        if flag > 1 {
            return Err(FrameError::BadFlag(flag));
        }
        let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
        if len > max {
            return Err(FrameError::TooLarge { len, max });
        }
        let total = HEADER_LEN + len;
        Ok((buf.len() >= total).then_some(total))
    }

    /// Phase two: splits the frame that [`Frame::check`] found off `buf`.
    ///
    /// `total` must be the value `check` returned for this buffer.
    pub fn parse(buf: &mut BytesMut, total: usize) -> Frame {
        let mut frame = buf.split_to(total);
        let compressed = frame.get_u8() == 1;
        frame.advance(HEADER_LEN - 1);
        Frame {
            compressed,
            message: frame.freeze(),
        }
    }

    /// Prefixes an uncompressed message.
    pub fn encode(message: &[u8]) -> Bytes {
        let mut out = BytesMut::with_capacity(HEADER_LEN + message.len());
        out.put_u8(0);
        out.put_u32(message.len() as u32);
        out.put_slice(message);
        out.freeze()
    }

    /// Encodes a protobuf message and prefixes it.
    pub fn encode_message(message: &impl prost::Message) -> Bytes {
        let len = message.encoded_len();
        let mut out = BytesMut::with_capacity(HEADER_LEN + len);
        out.put_u8(0);
        out.put_u32(len as u32);
        // Cannot fail: the buffer was sized from encoded_len.
        let _ = message.encode(&mut out);
        out.freeze()
    }
}

/// Accumulates DATA chunks and yields complete frames.
#[derive(Debug)]
pub struct Decoder {
    buf: BytesMut,
    max: usize,
}

impl Decoder {
    /// A decoder refusing messages longer than `max` bytes.
    pub fn new(max: usize) -> Decoder {
        Decoder {
            buf: BytesMut::new(),
            max,
        }
    }

    /// Appends one chunk of the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete frame, if the buffered bytes hold one.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        match Frame::check(&self.buf, self.max)? {
            Some(total) => Ok(Some(Frame::parse(&mut self.buf, total))),
            None => Ok(None),
        }
    }

    /// Called at end of stream: leftover bytes mean a truncated frame.
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let want = if self.buf.len() >= HEADER_LEN {
            HEADER_LEN
                + u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize
        } else {
            HEADER_LEN
        };
        Err(FrameError::Truncated {
            have: self.buf.len(),
            want,
        })
    }

    /// Bytes buffered but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(flag: u8, len: u32) -> Vec<u8> {
        let mut v = vec![flag];
        v.extend_from_slice(&len.to_be_bytes());
        v
    }

    #[test]
    fn encode_writes_flag_then_big_endian_length() {
        let framed = Frame::encode(b"abc");
        assert_eq!(&framed[..], &[0, 0, 0, 0, 3, b'a', b'b', b'c']);
        assert_eq!(&Frame::encode(b"")[..], &[0, 0, 0, 0, 0]);
    }

    #[test]
    fn check_needs_the_whole_prefix_and_body() {
        let framed = Frame::encode(b"hello");
        for cut in 0..framed.len() {
            assert_eq!(Frame::check(&framed[..cut], 100), Ok(None), "cut at {cut}");
        }
        assert_eq!(Frame::check(&framed, 100), Ok(Some(10)));
    }

    #[test]
    fn oversized_message_is_rejected_from_its_prefix_alone() {
        let header = prefix(0, 4 * 1024 * 1024 + 1);
        assert_eq!(
            Frame::check(&header, DEFAULT_MAX_MESSAGE_SIZE),
            Err(FrameError::TooLarge {
                len: 4 * 1024 * 1024 + 1,
                max: DEFAULT_MAX_MESSAGE_SIZE
            })
        );
        // Exactly at the limit is fine (needs more bytes, no error).
        let header = prefix(0, 4 * 1024 * 1024);
        assert_eq!(Frame::check(&header, DEFAULT_MAX_MESSAGE_SIZE), Ok(None));
    }

    #[test]
    fn flag_other_than_zero_or_one_is_rejected() {
        assert_eq!(Frame::check(&prefix(2, 0), 10), Err(FrameError::BadFlag(2)));
        assert_eq!(Frame::check(&prefix(1, 0), 10), Ok(Some(5)));
    }

    #[test]
    fn decoder_reassembles_a_message_split_across_chunks() {
        let framed = Frame::encode(b"split me");
        let mut d = Decoder::new(100);
        for byte in framed.iter() {
            assert_eq!(d.next_frame(), Ok(None));
            d.push(&[*byte]);
        }
        let frame = d.next_frame().unwrap().unwrap();
        assert_eq!(frame.message, Bytes::from_static(b"split me"));
        assert!(!frame.compressed);
        assert_eq!(d.buffered(), 0);
        assert_eq!(d.finish(), Ok(()));
    }

    #[test]
    fn decoder_yields_several_messages_from_one_chunk() {
        let mut chunk = Frame::encode(b"one").to_vec();
        chunk.extend_from_slice(&Frame::encode(b""));
        chunk.extend_from_slice(&prefix(1, 3));
        chunk.extend_from_slice(b"zip");
        let mut d = Decoder::new(100);
        d.push(&chunk);
        let got: Vec<Frame> = std::iter::from_fn(|| d.next_frame().unwrap()).collect();
        assert_eq!(
            got,
            vec![
                Frame {
                    compressed: false,
                    message: Bytes::from_static(b"one")
                },
                Frame {
                    compressed: false,
                    message: Bytes::new()
                },
                Frame {
                    compressed: true,
                    message: Bytes::from_static(b"zip")
                },
            ]
        );
    }

    #[test]
    fn leftover_bytes_at_end_of_stream_are_a_truncated_frame() {
        let mut d = Decoder::new(100);
        d.push(&[0, 0]);
        assert_eq!(d.finish(), Err(FrameError::Truncated { have: 2, want: 5 }));
        let mut d = Decoder::new(100);
        d.push(&Frame::encode(b"hello")[..7]);
        assert_eq!(d.next_frame(), Ok(None));
        assert_eq!(d.finish(), Err(FrameError::Truncated { have: 7, want: 10 }));
    }

    #[test]
    fn encode_message_round_trips_through_the_decoder() {
        let msg = prost_types::Duration {
            seconds: 3,
            nanos: 7,
        };
        let mut d = Decoder::new(100);
        d.push(&Frame::encode_message(&msg));
        let frame = d.next_frame().unwrap().unwrap();
        let back: prost_types::Duration = prost::Message::decode(frame.message).unwrap();
        assert_eq!(back, msg);
    }
}
