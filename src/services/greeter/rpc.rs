//! The `helloworld.v1.Greeter` methods, written once for both transports:
//! [`methods`] is the table gRPC registers and the HTTP gateway derives its
//! routes for (from the `google.api.http` options of greeter.proto). Adding
//! an RPC is its `.proto` declaration, its use case in [`biz`], and one
//! entry here; a method declared without an entry (or the reverse) stops
//! start-up, naming it.
//!
//! `UserList` answers in one message, and a message may not exceed the 4 MiB
//! the server itself accepts (clients refuse larger ones by default). With the
//! registration bounds of [`biz`] a user costs at most
//! [`biz::MAX_WIRE_USER_BYTES`] (200) bytes, so at least
//! [`USER_LIST_GUARANTEED_USERS`] (20 971) users always fit; past the limit the
//! call is `RESOURCE_EXHAUSTED`, saying how many users and bytes it would take.

use std::sync::Arc;

use super::api::{
    HelloReply, HelloRequest, User, UserListRequest, UserListResponse, UserRegisterRequest,
    UserRegisterResponse,
};
use super::biz::{self, Usecases};
use crate::protocol::grpc::frame::DEFAULT_MAX_MESSAGE_SIZE;
use crate::protocol::grpc::{unary, Code, Failure, UnaryMethod};

/// How many users `UserList` can always return in one 4 MiB message, however
/// long (within the bounds) their usernames and passwords are.
pub const USER_LIST_GUARANTEED_USERS: usize = DEFAULT_MAX_MESSAGE_SIZE / biz::MAX_WIRE_USER_BYTES;

/// A use-case error as both transports report it: the gRPC code (the HTTP
/// status follows from it) and the Kratos reason.
pub fn failure_of(e: biz::Error) -> Failure {
    let code = match e {
        biz::Error::InvalidArgument { .. } => Code::InvalidArgument,
        biz::Error::AlreadyExists { .. } => Code::AlreadyExists,
        biz::Error::Internal { .. } => Code::Internal,
        biz::Error::Unavailable { .. } => Code::Unavailable,
        biz::Error::Busy { .. } => Code::ResourceExhausted,
    };
    Failure::new(code, e.reason(), e.message())
}

/// The `UserList` reply for `users`, or `RESOURCE_EXHAUSTED` when it would
/// encode to more than `max` bytes.
pub fn user_list_reply(users: Vec<biz::User>, max: usize) -> Result<UserListResponse, Failure> {
    let reply = UserListResponse {
        users: users
            .into_iter()
            .map(|u| User {
                username: u.username,
                password: u.password,
            })
            .collect(),
        next_page_token: String::new(),
    };
    let size = prost::Message::encoded_len(&reply);
    if size > max {
        return Err(Failure::new(
            Code::ResourceExhausted,
            "USER_LIST_TOO_LARGE",
            format!(
                "UserList would be {size} bytes for {} users, over the {max}-byte message limit \
                 (at least {USER_LIST_GUARANTEED_USERS} users always fit)",
                reply.users.len()
            ),
        ));
    }
    Ok(reply)
}

/// The Greeter's methods by their names in greeter.proto, each one a named
/// function over the use cases both transports share. The proto is the
/// list: `Gateway::new` refuses, at start-up, a name here that the service
/// does not declare and a declared method missing here.
pub fn methods(usecases: &Arc<Usecases>) -> Vec<(&'static str, UnaryMethod)> {
    vec![
        ("SayHello", bind(usecases, say_hello)),
        ("SayHelloAgain", bind(usecases, say_hello_again)),
        ("UserRegister", bind(usecases, user_register)),
        ("UserList", bind(usecases, user_list)),
    ]
}

/// `f` as a method of the table, handed the shared use cases on each call.
fn bind<Req, Resp, F, Fut>(usecases: &Arc<Usecases>, f: F) -> UnaryMethod
where
    Req: prost::Message + Default + 'static,
    Resp: prost::Message + 'static,
    F: Fn(Arc<Usecases>, Req) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Resp, Failure>> + Send + 'static,
{
    let usecases = usecases.clone();
    unary(move |req| f(usecases.clone(), req))
}

async fn say_hello(uc: Arc<Usecases>, req: HelloRequest) -> Result<HelloReply, Failure> {
    let message = uc.greeter.say_hello(&req.name).await.map_err(failure_of)?;
    Ok(HelloReply { message })
}

async fn say_hello_again(uc: Arc<Usecases>, req: HelloRequest) -> Result<HelloReply, Failure> {
    let message = uc
        .greeter
        .say_hello_again(&req.name)
        .await
        .map_err(failure_of)?;
    Ok(HelloReply { message })
}

async fn user_register(
    uc: Arc<Usecases>,
    req: UserRegisterRequest,
) -> Result<UserRegisterResponse, Failure> {
    uc.users
        .register(&req.username, &req.password)
        .await
        .map_err(failure_of)?;
    Ok(UserRegisterResponse {
        result: "success".into(),
    })
}

async fn user_list(uc: Arc<Usecases>, req: UserListRequest) -> Result<UserListResponse, Failure> {
    let (users, next) = uc
        .users
        .list_page(req.page_size, &req.page_token)
        .await
        .map_err(failure_of)?;
    let mut reply = user_list_reply(users, DEFAULT_MAX_MESSAGE_SIZE)?;
    reply.next_page_token = next;
    Ok(reply)
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
    fn greeter_proto_bounds_the_user_fields_as_the_wire_size_assumes() {
        let files = crate::services::greeter::api::parsed_files().unwrap();
        let rule = |message: &str, field: &str| {
            files[0]
                .field_rules
                .iter()
                .find(|r| r.message == message && r.field == field)
                .cloned()
                .unwrap_or_else(|| panic!("no rule for {message}.{field}"))
        };
        // ASCII only (the pattern), so 64 characters are 64 bytes.
        let username = rule(".helloworld.v1.UserRegisterRequest", "username");
        assert_eq!(username.max_len, Some(biz::USERNAME_MAX_BYTES as u64));
        assert!(username.pattern.unwrap().is_match("Ann_O.Neil-2"));
        let password = rule(".helloworld.v1.UserRegisterRequest", "password");
        assert_eq!(password.max_bytes, Some(biz::PASSWORD_MAX_BYTES as u64));
        let name = rule(".helloworld.v1.HelloRequest", "name");
        assert_eq!(name.max_bytes, Some(biz::NAME_MAX_BYTES as u64));
    }

    #[tokio::test]
    async fn the_method_table_is_exactly_the_methods_greeter_proto_declares() {
        use crate::services::greeter::data::{Data, GreeterStore, UserStore};
        let data = Data::open(":memory:").unwrap();
        let usecases = Arc::new(Usecases {
            greeter: biz::GreeterUsecase::new(Arc::new(GreeterStore::new(data.clone()))),
            users: biz::UserUsecase::new(Arc::new(UserStore::new(data))),
        });
        let files = crate::services::greeter::api::parsed_files().unwrap();
        let service = crate::services::greeter::api::SERVICE;
        let table = methods(&usecases);
        crate::protocol::gateway::Gateway::new(&files, service, &table)
            .expect("every declared method has an entry, and no entry more");
        // The check that makes this so: an entry too few stops start-up.
        let err = crate::protocol::gateway::Gateway::new(&files, service, &table[1..])
            .expect_err("a declared method without an entry");
        assert!(err.to_string().contains("SayHello: is declared"), "{err}");
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
