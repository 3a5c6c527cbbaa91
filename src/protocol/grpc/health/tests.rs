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

/// The hand-built descriptor says what the shipped upstream text says:
/// each message, field (type, name, number), enum value and rpc appears in
/// it, and the text declares no message or rpc the descriptor lacks.
#[test]
fn the_hand_built_descriptor_matches_the_shipped_health_proto() {
    let text: String = HEALTH_PROTO
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let fd = file_descriptor();
    assert!(text.contains(&format!("package {};", fd.package())));
    let short = |t: &str| t.rsplit('.').next().unwrap().to_string();
    let mut messages = 0;
    for m in &fd.message_type {
        messages += 1;
        assert!(
            text.contains(&format!("message {} {{", m.name())),
            "{}",
            m.name()
        );
        for f in &m.field {
            let ty = match f.r#type() {
                Type::String => "string".to_string(),
                Type::Message if f.label() == Label::Repeated => {
                    "map<string, HealthCheckResponse>".to_string()
                }
                _ => short(f.type_name()),
            };
            let decl = format!("{ty} {} = {};", f.name(), f.number());
            assert!(text.contains(&decl), "{decl}");
        }
        for e in &m.enum_type {
            assert!(text.contains(&format!("enum {} {{", e.name())));
            for v in &e.value {
                let decl = format!("{} = {};", v.name(), v.number());
                assert!(text.contains(&decl), "{decl}");
            }
        }
    }
    assert_eq!(text.matches("message ").count(), messages);
    let s = &fd.service[0];
    assert!(text.contains(&format!("service {} {{", s.name())));
    for m in &s.method {
        let stream = if m.server_streaming() { "stream " } else { "" };
        let decl = format!(
            "rpc {}({}) returns ({stream}{});",
            m.name(),
            short(m.input_type()),
            short(m.output_type())
        );
        assert!(text.contains(&decl), "{decl}");
    }
    assert_eq!(text.matches("rpc ").count(), s.method.len());
    let opts = fd.options.as_ref().unwrap();
    for (key, value) in [
        ("csharp_namespace", opts.csharp_namespace()),
        ("go_package", opts.go_package()),
        ("java_outer_classname", opts.java_outer_classname()),
        ("java_package", opts.java_package()),
        ("objc_class_prefix", opts.objc_class_prefix()),
    ] {
        let decl = format!("option {key} = \"{value}\";");
        assert!(text.contains(&decl), "{decl}");
    }
    assert_eq!(text.matches("option ").count(), 6);
}
