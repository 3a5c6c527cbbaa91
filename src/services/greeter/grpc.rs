//! The greeter's gRPC transport: the three `helloworld.v1.Greeter` methods as
//! unary handlers over the use cases, plus server reflection.
//!
//! `UserList` answers in one message, and a message may not exceed the 4 MiB
//! the server itself accepts (clients refuse larger ones by default). With the
//! registration bounds of [`biz`] a user costs at most
//! [`biz::MAX_WIRE_USER_BYTES`] (200) bytes, so at least
//! [`USER_LIST_GUARANTEED_USERS`] (20 971) users always fit; past the limit the
//! call is `RESOURCE_EXHAUSTED`, saying how many users and bytes it would take.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::api::{
    self, Empty, HelloReply, HelloRequest, User, UserListResponse, UserRegisterRequest,
    UserRegisterResponse,
};
use super::biz::{self, Usecases};
use crate::protocol::grpc::descriptor::ProtoError;
use crate::protocol::grpc::frame::DEFAULT_MAX_MESSAGE_SIZE;
use crate::protocol::grpc::reflection::Reflection;
use crate::protocol::grpc::server::UnaryHandler;
use crate::protocol::grpc::{unary, Code, Options, Server, Status};

/// How many users `UserList` can always return in one 4 MiB message, however
/// long (within the bounds) their usernames and passwords are.
pub const USER_LIST_GUARANTEED_USERS: usize = DEFAULT_MAX_MESSAGE_SIZE / biz::MAX_WIRE_USER_BYTES;

/// The `UserList` reply for `users`, or `RESOURCE_EXHAUSTED` when it would
/// encode to more than `max` bytes.
pub(crate) fn user_list_reply(
    users: Vec<biz::User>,
    max: usize,
) -> Result<UserListResponse, Status> {
    let reply = UserListResponse {
        users: users
            .into_iter()
            .map(|u| User {
                username: u.username,
                password: u.password,
            })
            .collect(),
    };
    let size = prost::Message::encoded_len(&reply);
    if size > max {
        return Err(Status::new(
            Code::ResourceExhausted,
            format!(
                "UserList would be {size} bytes for {} users, over the {max}-byte message limit \
                 (at least {USER_LIST_GUARANTEED_USERS} users always fit)",
                reply.users.len()
            ),
        ));
    }
    Ok(reply)
}

/// Maps a use-case error to a gRPC status.
pub(crate) fn status_of(e: biz::Error) -> Status {
    let code = match e {
        biz::Error::InvalidArgument { .. } => Code::InvalidArgument,
        biz::Error::AlreadyExists { .. } => Code::AlreadyExists,
        biz::Error::Internal { .. } => Code::Internal,
        biz::Error::Unavailable { .. } => Code::Unavailable,
    };
    Status::new(code, e.message())
}

/// Builds the gRPC server: the Greeter methods and reflection, `timeout`
/// per call. The method table is keyed by [`api::method`], the names the
/// `.proto` declares; each method is a plain async function of the shared
/// use cases and its request.
pub fn routes(usecases: &Arc<Usecases>, timeout: Option<Duration>) -> Result<Server, ProtoError> {
    let options = Options {
        timeout,
        ..Options::default()
    };
    let calls = Arc::new(Calls {
        usecases: Arc::clone(usecases),
        max_message_size: options.max_message_size,
    });
    let mut b = Server::builder(options);
    let methods = [
        (api::method::SAY_HELLO, method(&calls, say_hello)),
        (api::method::USER_REGISTER, method(&calls, user_register)),
        (api::method::USER_LIST, method(&calls, user_list)),
    ];
    for (name, handler) in methods {
        b.unary(api::SERVICE, name, handler);
    }
    Arc::new(Reflection::new(vec![api::file_descriptor()?])?).register(&mut b);
    Ok(b.build())
}

/// What every method gets: the use cases and the server's message limit.
struct Calls {
    usecases: Arc<Usecases>,
    max_message_size: usize,
}

/// `f` as a unary handler over `calls`.
fn method<Req, Resp, F, Fut>(calls: &Arc<Calls>, f: F) -> UnaryHandler
where
    Req: prost::Message + Default + 'static,
    Resp: prost::Message + 'static,
    F: Fn(Arc<Calls>, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Resp, Status>> + Send + 'static,
{
    let calls = Arc::clone(calls);
    unary(move |req: Req| f(Arc::clone(&calls), req))
}

async fn say_hello(calls: Arc<Calls>, req: HelloRequest) -> Result<HelloReply, Status> {
    let greeter = &calls.usecases.greeter;
    let message = greeter.say_hello(&req.name).await.map_err(status_of)?;
    Ok(HelloReply { message })
}

async fn user_register(
    calls: Arc<Calls>,
    req: UserRegisterRequest,
) -> Result<UserRegisterResponse, Status> {
    let users = &calls.usecases.users;
    users
        .register(&req.username, &req.password)
        .await
        .map_err(status_of)?;
    Ok(UserRegisterResponse {
        result: "success".into(),
    })
}

async fn user_list(calls: Arc<Calls>, _: Empty) -> Result<UserListResponse, Status> {
    let list = calls.usecases.users.list().await.map_err(status_of)?;
    user_list_reply(list, calls.max_message_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest_users(n: usize) -> Vec<biz::User> {
        let user = biz::User {
            id: 1,
            username: "u".repeat(biz::USERNAME_MAX_BYTES),
            password: "p".repeat(biz::PASSWORD_MAX_BYTES),
            age: 1,
        };
        vec![user; n]
    }

    #[test]
    fn user_list_fits_20971_users_of_maximum_size_in_4_mib_and_refuses_one_more() {
        assert_eq!(USER_LIST_GUARANTEED_USERS, 20_971);
        let one = user_list_reply(widest_users(1), usize::MAX).unwrap();
        assert_eq!(
            prost::Message::encoded_len(&one),
            biz::MAX_WIRE_USER_BYTES,
            "the per-user bound in biz is exact"
        );
        let fits = user_list_reply(widest_users(20_971), DEFAULT_MAX_MESSAGE_SIZE).unwrap();
        assert_eq!(prost::Message::encoded_len(&fits), 4_194_200);
        let err = user_list_reply(widest_users(20_972), DEFAULT_MAX_MESSAGE_SIZE).unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted);
        assert_eq!(
            err.message,
            "UserList would be 4194400 bytes for 20972 users, over the 4194304-byte message \
             limit (at least 20971 users always fit)"
        );
    }
}
