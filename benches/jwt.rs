//! HS256 sign and verify: the hand-written `handwire::protocol::jwt` against the
//! `jsonwebtoken` crate, on the same claims (the service's access token) and
//! the same secret, in the same run. After the criterion output, the ratio
//! of mean times (ours / theirs) is printed for each operation.
//!
//! `cargo bench --bench jwt`

use criterion::{criterion_group, Criterion};
use handwire::protocol::jwt::Hs256;
use handwire::services::token_auth::user::Role;
use handwire::services::token_auth::{Claims, TokenKind};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use std::hint::black_box;

const SECRET: &[u8] = b"benchmark secret, 32 bytes or longer";

fn claims() -> Claims {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    Claims {
        user_id: 42,
        role: Some(Role::User),
        kind: TokenKind::Access,
        iat: now,
        exp: now + 3600,
        jti: "0123456789abcdef0123456789abcdef".into(),
        ukey: "00112233445566778899aabbccddeeff".into(),
        fam: "ffeeddccbbaa99887766554433221100".into(),
    }
}

fn sign(c: &mut Criterion) {
    let claims = claims();
    let ours = Hs256::new(SECRET);
    let header = Header::new(Algorithm::HS256);
    let theirs = EncodingKey::from_secret(SECRET);
    let mut group = c.benchmark_group("jwt_sign");
    group.bench_function("handwire", |b| {
        b.iter(|| ours.sign(black_box(&claims)).expect("sign"))
    });
    group.bench_function("jsonwebtoken", |b| {
        b.iter(|| jsonwebtoken::encode(&header, black_box(&claims), &theirs).expect("encode"))
    });
    group.finish();
}

fn verify(c: &mut Criterion) {
    let claims = claims();
    let ours = Hs256::new(SECRET);
    let token = ours.sign(&claims).expect("sign");
    // Both libraries must accept each other's tokens, or the comparison is moot.
    let theirs = DecodingKey::from_secret(SECRET);
    let validation = Validation::new(Algorithm::HS256);
    let decoded = jsonwebtoken::decode::<Claims>(&token, &theirs, &validation).expect("decode");
    assert_eq!(decoded.claims, claims);
    let now = claims.iat;
    let mut group = c.benchmark_group("jwt_verify");
    group.bench_function("handwire", |b| {
        b.iter(|| {
            ours.verify::<Claims>(black_box(&token), now)
                .expect("verify")
        })
    });
    group.bench_function("jsonwebtoken", |b| {
        b.iter(|| {
            jsonwebtoken::decode::<Claims>(black_box(&token), &theirs, &validation).expect("decode")
        })
    });
    group.finish();
}

criterion_group!(benches, sign, verify);

#[path = "support/mod.rs"]
mod support;

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    support::print_ratios(&["jwt_sign", "jwt_verify"], "handwire", "jsonwebtoken");
}
