//! The router answered in-process (no socket): SSR of the planner, 404s.

mod common;

async fn get(uri: &str) -> (u16, String) {
    let (app, _dir) = common::app().await;
    let r = common::get(&app, uri).await;
    (r.status, r.body)
}

#[tokio::test]
async fn planner_is_server_rendered() {
    let (status, html) = get("/").await;
    assert_eq!(status, 200);
    assert!(html.contains("<h1>memplan</h1>"), "{html}");
    assert!(html.contains(r#"data-testid="plan-form""#));
    assert!(html.contains(r#"data-testid="verdict""#));
    assert!(html.contains("/pkg/memplan.js") || html.contains("memplan.wasm"));
}

#[tokio::test]
async fn plan_in_the_query_is_rendered_server_side() {
    let (_, default) = get("/").await;
    let (status, html) = get("/?gpu=a100-sxm4-40gb&gpus=1&shard=none&model=llama-2-7b").await;
    assert_eq!(status, 200);
    assert!(html.contains("40.00 GiB"), "capacity of an A100 40GB");
    assert!(html.contains("Does not fit"));
    assert_ne!(default, html);
}

#[tokio::test]
async fn bad_query_values_are_explained_not_500() {
    let (status, html) = get("/?mb=lots").await;
    assert_eq!(status, 200);
    assert!(html.contains("URL parameter `mb`"), "{html}");
}

#[tokio::test]
async fn unknown_path_is_404() {
    let (status, html) = get("/nope/nothing").await;
    assert_eq!(status, 404);
    assert!(html.contains("Page not found"));
}

#[tokio::test]
async fn form_fields_carry_their_values_for_a_js_off_submit() {
    let (_, html) = get("/?mb=3&seq=2048&gpus=4").await;
    for (name, value) in [("mb", "3"), ("seq", "2048"), ("gpus", "4")] {
        let at = html.find(&format!(r#"name="{name}""#)).expect(name);
        let tag_end = at + html[at..].find('>').unwrap();
        let tag_start = html[..at].rfind('<').unwrap();
        assert!(
            html[tag_start..tag_end].contains(&format!(r#"value="{value}""#)),
            "{name}: {}",
            &html[tag_start..tag_end]
        );
    }
    // A full GET submit of the form (every field, some empty) is the same plan.
    let (_, full) = get("/?model=llama-3.1-8b&gpu=h100-sxm-80gb&gpus=&mb=3&seq=2048").await;
    let (_, short) = get("/?mb=3&seq=2048").await;
    let fig = |h: &str| {
        h.split(r#"data-testid="device-used">"#)
            .nth(1)
            .map(|s| s[..12].to_string())
    };
    assert_eq!(fig(&full), fig(&short));
}

async fn get_with(uri: &str, accept_language: &str) -> String {
    let (app, _dir) = common::app().await;
    common::send(
        &app,
        http::Request::get(uri)
            .header("accept-language", accept_language)
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .body
}

#[tokio::test]
async fn chinese_by_accept_language_or_lang_parameter() {
    let zh = get_with("/", "zh-CN,zh;q=0.9,en;q=0.5").await;
    assert!(zh.contains(r#"<html lang="zh-CN""#), "{}", &zh[..200]);
    assert!(zh.contains("梯度检查点") && zh.contains("混合精度") && zh.contains("梯度累积"));
    assert!(zh.contains("放得下"));
    let en = get_with("/", "en-US").await;
    assert!(en.contains(r#"<html lang="en""#) && en.contains("Activation checkpointing"));
    let forced = get_with("/?lang=zh&shard=ddp&mb=8", "en-US").await;
    assert!(forced.contains("放不下") && forced.contains("如何调整"));
    // The fix-ladder links keep the chosen language.
    assert!(forced.contains("lang=zh\""), "ladder links carry lang");
}

#[tokio::test]
async fn charts_are_in_the_server_html() {
    let (_, html) = get("/?pp=2&gpus=8").await;
    for id in ["chart-breakdown", "chart-batch", "chart-seq"] {
        let at = html.find(&format!(r#"data-testid="{id}""#)).expect(id);
        assert!(html[at..].trim_start().contains("<svg"), "{id} has no SVG");
    }
}
