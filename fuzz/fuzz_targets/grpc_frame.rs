//! Arbitrary bytes, in arbitrary chunks, through the gRPC frame decoder:
//! frames or errors, never a panic, and re-encoding a frame gives its bytes.
#![no_main]
use handwire::protocol::grpc::{Decoder, Frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let mut decoder = Decoder::new(1 << 16);
    let cut = (split as usize).min(rest.len());
    for chunk in [&rest[..cut], &rest[cut..]] {
        decoder.push(chunk);
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => {
                    if !frame.compressed {
                        let again = Frame::encode(&frame.message);
                        assert_eq!(again.len(), frame.message.len() + 5);
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    let _ = decoder.finish();
});
