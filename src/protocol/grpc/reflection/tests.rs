//! Unit tests of reflection: each query is answered from the descriptor set
//! (tests/grpc_proto_drift.rs checks the messages against the `.proto` files).

use super::*;

fn s(name: &str) -> String {
    name.to_owned()
}

fn reflection() -> Reflection {
    let demo = parse_proto(
        "demo/v1/demo.proto",
        "syntax = \"proto3\"; package demo.v1; service Demo { rpc Do (Req) returns (Req); } message Req { string a = 1; }",
    )
    .unwrap();
    Reflection::new(vec![demo]).unwrap()
}

fn ask(r: &Reflection, req: MessageRequest) -> MessageResponse {
    let request = ServerReflectionRequest {
        host: s("localhost"),
        message_request: Some(req),
    };
    let response = r.answer(request.clone());
    assert_eq!(response.valid_host, "localhost");
    assert_eq!(response.original_request, Some(request));
    response.message_response.unwrap()
}

fn file_names(response: MessageResponse) -> Vec<String> {
    match response {
        MessageResponse::FileDescriptorResponse(files) => files
            .file_descriptor_proto
            .iter()
            .map(|b| {
                FileDescriptorProto::decode(&b[..])
                    .unwrap()
                    .name()
                    .to_owned()
            })
            .collect(),
        other => panic!("expected files, got {other:?}"),
    }
}

#[test]
fn list_services_names_every_service_including_reflection() {
    match ask(&reflection(), MessageRequest::ListServices(s("*"))) {
        MessageResponse::ListServicesResponse(list) => {
            let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
            assert_eq!(
                names,
                [
                    "demo.v1.Demo",
                    "grpc.reflection.v1.ServerReflection",
                    "grpc.reflection.v1alpha.ServerReflection"
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn file_containing_symbol_finds_services_methods_messages_and_fields() {
    let r = reflection();
    for symbol in [
        "demo.v1.Demo",
        "demo.v1.Demo.Do",
        "demo.v1.Req",
        "demo.v1.Req.a",
    ] {
        assert_eq!(
            file_names(ask(&r, MessageRequest::FileContainingSymbol(s(symbol)))),
            ["demo/v1/demo.proto"]
        );
    }
    assert_eq!(
        file_names(ask(
            &r,
            MessageRequest::FileContainingSymbol(s("grpc.reflection.v1alpha.ServerReflection"))
        )),
        ["grpc/reflection/v1alpha/reflection.proto"]
    );
}

#[test]
fn file_by_filename_returns_the_descriptor() {
    let r = reflection();
    assert_eq!(
        file_names(ask(
            &r,
            MessageRequest::FileByFilename(s("demo/v1/demo.proto"))
        )),
        ["demo/v1/demo.proto"]
    );
}

#[test]
fn unknown_names_get_a_not_found_error_response() {
    let r = reflection();
    for req in [
        MessageRequest::FileContainingSymbol(s("demo.v1.Nope")),
        MessageRequest::FileByFilename(s("nope.proto")),
        MessageRequest::FileContainingExtension(ExtensionRequest {
            containing_type: s("demo.v1.Req"),
            extension_number: 100,
        }),
    ] {
        match ask(&r, req) {
            MessageResponse::ErrorResponse(e) => assert_eq!(e.error_code, Code::NotFound as i32),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn extension_numbers_of_a_known_type_are_empty() {
    match ask(
        &reflection(),
        MessageRequest::AllExtensionNumbersOfType(s("demo.v1.Req")),
    ) {
        MessageResponse::AllExtensionNumbersResponse(r) => {
            assert_eq!(r.base_type_name, "demo.v1.Req");
            assert!(r.extension_number.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn nested_types_enums_and_imports_are_served_and_well_known_imports_dropped() {
    use crate::protocol::grpc::descriptor::{parse_files, GOOGLE_API_FILES};
    let shop = "syntax = \"proto3\"; package shop.v1; import \"google/api/annotations.proto\";\n\
                enum Color { RED = 0; }\n\
                message Item { message Price { int64 cents = 1; } enum Size { S = 0; } Price p = 1; }\n\
                service Shop { rpc Get (Item) returns (Item) { option (google.api.http) = { get: \"/i\" }; } }";
    let [a, h] = GOOGLE_API_FILES;
    let files = parse_files(&[("shop.proto", shop), a, h]).unwrap();
    let r = Reflection::new(files.into_iter().map(|f| f.descriptor).collect()).unwrap();
    for symbol in [
        "shop.v1.Color",
        "shop.v1.Item.Price",
        "shop.v1.Item.Price.cents",
        "shop.v1.Item.Size",
        "shop.v1.Shop.Get",
    ] {
        let names = file_names(ask(&r, MessageRequest::FileContainingSymbol(s(symbol))));
        assert_eq!(names[0], "shop.proto", "{symbol}");
        // The imports come along, transitively; descriptor.proto is not one.
        let mut rest = names[1..].to_vec();
        rest.sort();
        assert_eq!(
            rest,
            ["google/api/annotations.proto", "google/api/http.proto"],
            "{symbol}"
        );
    }
    let names = file_names(ask(
        &r,
        MessageRequest::FileContainingSymbol(s("google.api.HttpRule")),
    ));
    assert_eq!(names, ["google/api/http.proto"]);
    let annotations = r.file("google/api/annotations.proto").unwrap();
    assert_eq!(annotations.dependency, ["google/api/http.proto"]);
    assert!(
        annotations.extension.is_empty(),
        "the extend of descriptor.proto types is dropped"
    );
}
