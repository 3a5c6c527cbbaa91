use super::*;

#[test]
fn check_answers_a_set_status_and_not_found_for_a_service_never_set() {
    let h = Health::new();
    assert_eq!(h.check("").unwrap(), ServingStatus::Serving);
    h.set_serving_status("a.B", ServingStatus::NotServing);
    assert_eq!(h.check("a.B").unwrap(), ServingStatus::NotServing);
    let err = h.check("no.Such").unwrap_err();
    assert_eq!(err.code, Code::NotFound);
    assert_eq!(err.message, "unknown service");
}

#[test]
fn list_answers_up_to_100_services_and_is_resource_exhausted_past_them() {
    let h = Health::new();
    for i in 1..MAX_LISTED {
        h.set_serving_status(&format!("svc.S{i}"), ServingStatus::Serving);
    }
    let list = h.list().unwrap();
    assert_eq!(list.statuses.len(), 100);
    assert_eq!(list.statuses[""].status, ServingStatus::Serving as i32);
    h.set_serving_status("svc.OneTooMany", ServingStatus::Serving);
    let err = h.list().unwrap_err();
    assert_eq!(err.code, Code::ResourceExhausted);
    assert!(err.message.contains("100"), "{}", err.message);
}

#[test]
fn shutdown_turns_every_status_not_serving_and_ignores_later_changes() {
    let h = Health::new();
    h.set_serving_status("a.B", ServingStatus::Serving);
    assert!(!h.is_shutdown());
    h.shutdown();
    assert!(h.is_shutdown());
    assert_eq!(h.check("").unwrap(), ServingStatus::NotServing);
    assert_eq!(h.check("a.B").unwrap(), ServingStatus::NotServing);
    h.set_serving_status("a.B", ServingStatus::Serving);
    assert_eq!(h.check("a.B").unwrap(), ServingStatus::NotServing);
    h.set_serving_status("c.D", ServingStatus::Serving);
    assert_eq!(h.check("c.D").unwrap_err().code, Code::NotFound);
}

#[test]
fn a_watch_channel_lives_only_as_long_as_its_watchers() {
    let h = Arc::new(Health::new());
    let a = h.subscribe("made.Up");
    let b = h.subscribe("made.Up");
    assert_eq!(
        *a.rx.as_ref().unwrap().borrow(),
        ServingStatus::ServiceUnknown
    );
    assert_eq!(h.lock().watchers.len(), 1);
    drop(a);
    assert_eq!(h.lock().watchers.len(), 1, "b still watches");
    drop(b);
    assert!(h.lock().watchers.is_empty());
}

#[tokio::test]
async fn a_watcher_sees_a_status_set_after_it_subscribed() {
    let h = Arc::new(Health::new());
    let mut sub = h.subscribe("late.Service");
    h.set_serving_status("late.Service", ServingStatus::Serving);
    sub.rx().changed().await.unwrap();
    assert_eq!(*sub.rx().borrow_and_update(), ServingStatus::Serving);
}

/// The upstream text parses as it is: its file options (`csharp_namespace`
/// among them), the enum nested in `HealthCheckResponse`, the `map<>` of
/// `HealthListResponse` (a nested map-entry message) and the
/// server-streaming `Watch`, all as protoc would describe them.
#[test]
fn the_shipped_health_proto_parses_with_its_nested_enum_map_and_options() {
    use prost_types::field_descriptor_proto::{Label, Type};
    let fd = file_descriptor().expect("the shipped health.proto parses");
    assert_eq!(fd.name(), FILE_NAME);
    assert_eq!(fd.package(), "grpc.health.v1");
    let opts = fd.options.as_ref().unwrap();
    assert_eq!(opts.csharp_namespace(), "Grpc.Health.V1");
    assert_eq!(
        opts.go_package(),
        "google.golang.org/grpc/health/grpc_health_v1"
    );
    assert!(opts.java_multiple_files());
    assert_eq!(opts.java_outer_classname(), "HealthProto");
    assert_eq!(opts.java_package(), "io.grpc.health.v1");
    assert_eq!(opts.objc_class_prefix(), "GrpcHealthV1");
    let message = |name: &str| {
        fd.message_type
            .iter()
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("message {name}"))
    };
    let response = message("HealthCheckResponse");
    let status = &response.field[0];
    assert_eq!((status.name(), status.number()), ("status", 1));
    assert_eq!(status.r#type(), Type::Enum);
    assert_eq!(
        status.type_name(),
        ".grpc.health.v1.HealthCheckResponse.ServingStatus"
    );
    let values: Vec<(&str, i32)> = response.enum_type[0]
        .value
        .iter()
        .map(|v| (v.name(), v.number()))
        .collect();
    assert_eq!(
        values,
        [
            ("UNKNOWN", ServingStatus::Unknown as i32),
            ("SERVING", ServingStatus::Serving as i32),
            ("NOT_SERVING", ServingStatus::NotServing as i32),
            ("SERVICE_UNKNOWN", ServingStatus::ServiceUnknown as i32),
        ]
    );
    let list = message("HealthListResponse");
    let statuses = &list.field[0];
    assert_eq!(statuses.label(), Label::Repeated);
    assert_eq!(
        statuses.type_name(),
        ".grpc.health.v1.HealthListResponse.StatusesEntry"
    );
    let entry = &list.nested_type[0];
    assert_eq!(entry.name(), "StatusesEntry");
    assert!(entry.options.as_ref().unwrap().map_entry());
    assert_eq!(
        entry.field[1].type_name(),
        ".grpc.health.v1.HealthCheckResponse"
    );
    let methods: Vec<(&str, &str, bool)> = fd.service[0]
        .method
        .iter()
        .map(|m| (m.name(), m.input_type(), m.server_streaming()))
        .collect();
    assert_eq!(
        methods,
        [
            ("Check", ".grpc.health.v1.HealthCheckRequest", false),
            ("List", ".grpc.health.v1.HealthListRequest", false),
            ("Watch", ".grpc.health.v1.HealthCheckRequest", true),
        ]
    );
}
