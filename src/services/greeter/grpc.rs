//! The greeter's gRPC transport: the three `helloworld.v1.Greeter` methods as
//! unary handlers over the use cases, plus server reflection.

use std::sync::Arc;
use std::time::Duration;

use super::api::{
    self, Empty, HelloReply, HelloRequest, User, UserListResponse, UserRegisterRequest,
    UserRegisterResponse,
};
use super::biz::{self, GreeterUsecase, UserUsecase};
use crate::protocol::grpc::descriptor::ProtoError;
use crate::protocol::grpc::reflection::Reflection;
use crate::protocol::grpc::{unary, Code, Options, Server, Status};

/// Maps a use-case error to a gRPC status.
pub fn status_of(e: biz::Error) -> Status {
    let code = match e {
        biz::Error::InvalidArgument { .. } => Code::InvalidArgument,
        biz::Error::AlreadyExists { .. } => Code::AlreadyExists,
        biz::Error::Internal { .. } => Code::Internal,
        biz::Error::Unavailable { .. } => Code::Unavailable,
    };
    Status::new(code, e.message())
}

/// Builds the gRPC server: Greeter methods and reflection, `timeout` per call.
pub fn server(
    greeter: Arc<GreeterUsecase>,
    users: Arc<UserUsecase>,
    timeout: Option<Duration>,
) -> Result<Server, ProtoError> {
    let mut b = Server::builder(Options {
        timeout,
        ..Options::default()
    });
    b.unary(
        api::SERVICE,
        "SayHello",
        unary(move |req: HelloRequest| {
            let greeter = greeter.clone();
            async move {
                let message = greeter.say_hello(&req.name).await.map_err(status_of)?;
                Ok(HelloReply { message })
            }
        }),
    );
    let u = users.clone();
    b.unary(
        api::SERVICE,
        "UserRegister",
        unary(move |req: UserRegisterRequest| {
            let users = u.clone();
            async move {
                users
                    .register(&req.username, &req.password)
                    .await
                    .map_err(status_of)?;
                Ok(UserRegisterResponse {
                    result: "success".into(),
                })
            }
        }),
    );
    b.unary(
        api::SERVICE,
        "UserList",
        unary(move |_: Empty| {
            let users = users.clone();
            async move {
                let list = users.list().await.map_err(status_of)?;
                Ok(UserListResponse {
                    users: list
                        .into_iter()
                        .map(|u| User {
                            username: u.username,
                            password: u.password,
                        })
                        .collect(),
                })
            }
        }),
    );
    Arc::new(Reflection::new(vec![api::file_descriptor()?])?).register(&mut b);
    Ok(b.build())
}
