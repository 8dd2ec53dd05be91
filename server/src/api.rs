//! The JSON API (`/api/v1`, documented in docs/api.md). Handlers call the
//! same service functions as the pages' server functions.

use crate::serve::AppState;
use app::api::{
    InputError, NewPlan, PlanList, SavedPlan, TraceView, MAX_BODY_BYTES, MAX_TRACE_BYTES,
};
use app::store::{self, ServiceError, SharedStore};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

/// Errors at the API's edge: 4xx say precisely what is wrong; 5xx are logged
/// and answered generically.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("no saved plan has the id `{0}`")]
    NotFound(String),
    #[error("request body is larger than {} KiB", MAX_BODY_BYTES / 1024)]
    TooLarge,
    #[error("the upload is larger than {} MiB", MAX_TRACE_BYTES >> 20)]
    TraceTooLarge,
    #[error("cannot read the request body: {0}")]
    Body(String),
    #[error("internal error")]
    Internal(String),
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Input(i) => ApiError::Input(i),
            ServiceError::NotFound(id) => ApiError::NotFound(id),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

#[derive(Serialize)]
struct ErrorBody {
    error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<u64>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let msg = self.to_string();
        let (status, body) = match self {
            ApiError::Input(InputError::Syntax { line, column, .. }) => (
                StatusCode::BAD_REQUEST,
                ErrorBody {
                    error: msg,
                    field: None,
                    line: Some(line),
                    column: Some(column),
                },
            ),
            ApiError::Input(InputError::Field { field, .. }) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorBody {
                    error: msg,
                    field: Some(field),
                    line: None,
                    column: None,
                },
            ),
            ApiError::NotFound(_) => (
                StatusCode::NOT_FOUND,
                ErrorBody {
                    error: msg,
                    field: None,
                    line: None,
                    column: None,
                },
            ),
            ApiError::TooLarge | ApiError::TraceTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorBody {
                    error: msg,
                    field: None,
                    line: None,
                    column: None,
                },
            ),
            ApiError::Body(_) => (
                StatusCode::BAD_REQUEST,
                ErrorBody {
                    error: msg,
                    field: None,
                    line: None,
                    column: None,
                },
            ),
            ApiError::Internal(detail) => {
                tracing::error!(%detail, "API request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    ErrorBody {
                        error: msg,
                        field: None,
                        line: None,
                        column: None,
                    },
                )
            }
        };
        (status, Json(body)).into_response()
    }
}

/// `POST /api/v1/plans` answer.
#[derive(Serialize, Deserialize)]
pub struct Created {
    pub id: String,
    pub url: String,
}

/// `GET /api/v1/plans/{id}` answer: the saved plan and its estimate by the
/// current model.
#[derive(Serialize)]
struct PlanResponse {
    #[serde(flatten)]
    saved: SavedPlan,
    url: String,
    model_version: u32,
    report: Option<cost_model::report::Report>,
    /// Why there is no report (the plan no longer validates under this model).
    #[serde(skip_serializing_if = "Option::is_none")]
    report_error: Option<String>,
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(default)]
    query: String,
    #[serde(default)]
    page: Option<String>,
}

/// The API's routes (mounted under `/api/v1`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/plans", post(create_plan).get(list_plans))
        .route("/plans/{id}", get(get_plan))
        .route(
            "/plans/{id}/traces",
            post(upload_trace)
                .get(list_traces)
                .layer(DefaultBodyLimit::max(MAX_TRACE_BYTES as usize)),
        )
        .route("/estimate", post(estimate))
        .route("/layouts", post(layouts))
}

/// The body, or why it could not be read (too large: 413).
fn body(b: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    b.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge
        } else {
            ApiError::Body(r.body_text())
        }
    })
}

/// Requires a JSON (or unlabelled) body.
fn check_json(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => Ok(()),
        Some(ct) if ct.starts_with("application/json") || ct.starts_with("text/plain") => Ok(()),
        Some(ct) => Err(InputError::field(
            "Content-Type",
            format!("`{ct}` is not JSON; send application/json"),
        )
        .into()),
    }
}

async fn create_plan(
    State(store): State<SharedStore>,
    headers: axum::http::HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, [(header::HeaderName, String); 1], Json<Created>), ApiError> {
    let body = body(raw)?;
    check_json(&headers)?;
    let new = NewPlan::from_json_body(&body)?;
    let id = store::save(&*store, new).await?;
    let url = format!("/p/{id}");
    tracing::info!(%id, "plan saved");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, url.clone())],
        Json(Created { id, url }),
    ))
}

async fn get_plan(
    State(store): State<SharedStore>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let Some(saved) = store::load(&*store, &id).await? else {
        return Err(ApiError::NotFound(id));
    };
    let (report, report_error) = match cost_model::report::report(&saved.plan) {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let url = format!("/p/{}", saved.id);
    Ok(Json(PlanResponse {
        saved,
        url,
        model_version: cost_model::estimate::MODEL_VERSION,
        report,
        report_error,
    })
    .into_response())
}

async fn list_plans(
    State(store): State<SharedStore>,
    Query(p): Query<ListParams>,
) -> Result<Json<PlanList>, ApiError> {
    let page = match p.page.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => 1,
        Some(s) => s.parse::<u32>().ok().filter(|&n| n >= 1).ok_or_else(|| {
            InputError::field("page", format!("`{s}` is not a page number (1, 2, …)"))
        })?,
    };
    Ok(Json(store::list(&*store, &p.query, page).await?))
}

/// The plan a JSON body holds, or where it is wrong (line and column of a
/// syntax error, else the field).
fn plan_body(
    headers: &axum::http::HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<cost_model::Plan, ApiError> {
    let body = body(raw)?;
    check_json(headers)?;
    let text = std::str::from_utf8(&body)
        .map_err(|e| InputError::field("body", format!("not UTF-8: {e}")))?;
    let plan =
        cost_model::Plan::from_json(text).map_err(|e| match (e.syntax, e.line, e.column) {
            (true, Some(line), Some(column)) => InputError::Syntax {
                line,
                column,
                message: e.message.clone(),
            },
            _ => InputError::field(
                e.field.clone().unwrap_or_else(|| "plan".into()),
                e.to_string(),
            ),
        })?;
    Ok(plan)
}

async fn estimate(
    headers: axum::http::HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let plan = plan_body(&headers, raw)?;
    let report = cost_model::report::report(&plan)
        .map_err(|e| InputError::field(e.field(), e.to_string()))?;
    Ok(Json(report).into_response())
}

#[derive(Deserialize)]
struct LayoutParams {
    /// How many layouts to return (default `LAYOUTS_SHOWN`, at most 100).
    #[serde(default)]
    top: Option<String>,
}

/// Most layouts one request returns.
const MAX_LAYOUTS_RETURNED: usize = 100;

/// The layout search for a plan (`cost_model::layouts`): off the async
/// workers, as a search over thousands of GPUs takes tens of milliseconds.
async fn layouts(
    Query(q): Query<LayoutParams>,
    headers: axum::http::HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let top = match q.top.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => cost_model::layouts::LAYOUTS_SHOWN,
        Some(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LAYOUTS_RETURNED).contains(n))
            .ok_or_else(|| {
                InputError::field(
                    "top",
                    format!("`{s}` is not a count from 1 to {MAX_LAYOUTS_RETURNED}"),
                )
            })?,
    };
    let plan = plan_body(&headers, raw)?;
    let found =
        tokio::task::spawn_blocking(move || cost_model::layouts::search_layouts(&plan, top))
            .await
            .map_err(|e| ApiError::Internal(format!("layout search: {e}")))?
            .map_err(|e| InputError::field(e.field(), e.to_string()))?;
    Ok(Json(found).into_response())
}

/// Options of an upload, in the query string or as form fields.
#[derive(Deserialize, Default)]
pub struct UploadParams {
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub columns: String,
    #[serde(default)]
    pub filename: String,
}

/// An upload: the text of the trace and how to read it.
pub struct Upload {
    pub body: Vec<u8>,
    pub params: UploadParams,
}

fn too_large(status: StatusCode, msg: String) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::TraceTooLarge
    } else {
        ApiError::Body(msg)
    }
}

/// Reads a trace upload: `multipart/form-data` (a `trace` file, or `text`
/// pasted, plus `format` / `columns`) or the raw text as the body.
pub async fn read_upload(req: Request, mut params: UploadParams) -> Result<Upload, ApiError> {
    let multipart = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("multipart/form-data"));
    if !multipart {
        let body = Bytes::from_request(req, &())
            .await
            .map_err(|r| too_large(r.status(), r.body_text()))?;
        return Ok(Upload {
            body: body.to_vec(),
            params,
        });
    }
    let mut mp = Multipart::from_request(req, &())
        .await
        .map_err(|r| ApiError::Body(r.body_text()))?;
    let (mut file, mut text) = (Vec::new(), Vec::new());
    while let Some(field) = mp
        .next_field()
        .await
        .map_err(|e| too_large(e.status(), e.body_text()))?
    {
        let name = field.name().unwrap_or("").to_string();
        let fname = field.file_name().unwrap_or("").to_string();
        let data = field
            .bytes()
            .await
            .map_err(|e| too_large(e.status(), e.body_text()))?;
        match name.as_str() {
            "trace" | "file" if !data.is_empty() => {
                file = data.to_vec();
                if params.filename.is_empty() {
                    params.filename = fname;
                }
            }
            "text" => text = data.to_vec(),
            "format" => params.format = String::from_utf8_lossy(&data).into_owned(),
            "columns" => params.columns = String::from_utf8_lossy(&data).into_owned(),
            _ => {}
        }
    }
    let body = if file.is_empty() { text } else { file };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(InputError::field("trace", "no file chosen and nothing pasted").into());
    }
    Ok(Upload { body, params })
}

/// Parses, judges and stores an upload against saved plan `id`.
pub async fn attach(store: &SharedStore, id: &str, up: Upload) -> Result<TraceView, ApiError> {
    let opts = app::api::trace_options(&up.params.format, &up.params.columns)?;
    Ok(store::attach_trace(&**store, id, &up.body, &up.params.filename, &opts).await?)
}

async fn upload_trace(
    State(store): State<SharedStore>,
    Path(id): Path<String>,
    Query(params): Query<UploadParams>,
    req: Request,
) -> Result<(StatusCode, Json<TraceView>), ApiError> {
    let up = read_upload(req, params).await?;
    let view = attach(&store, &id, up).await?;
    tracing::info!(plan = %id, trace = %view.id, format = view.report.format.id(), "trace attached");
    Ok((StatusCode::CREATED, Json(view)))
}

async fn list_traces(
    State(store): State<SharedStore>,
    Path(id): Path<String>,
) -> Result<Json<Vec<TraceView>>, ApiError> {
    if store::load(&*store, &id).await?.is_none() {
        return Err(ApiError::NotFound(id));
    }
    Ok(Json(store::list_traces(&*store, &id).await?))
}

/// The plan page's upload form (works without JavaScript): stores the trace
/// and goes back to the plan, at the new verification or with the error.
pub async fn page_upload(
    State(store): State<SharedStore>,
    Path(id): Path<String>,
    req: Request,
) -> Response {
    let back = |q: &str, frag: &str| {
        axum::response::Redirect::to(&format!("/p/{id}{q}#{frag}")).into_response()
    };
    let up = match read_upload(req, UploadParams::default()).await {
        Ok(u) => u,
        Err(e) => {
            return back(
                &format!(
                    "?verify_error={}",
                    cost_model::query::escape(&e.to_string())
                ),
                "verify",
            )
        }
    };
    match attach(&store, &id, up).await {
        Ok(v) => back("", &format!("trace-{}", v.id)),
        Err(ApiError::NotFound(_)) => ApiError::NotFound(id.clone()).into_response(),
        Err(e @ ApiError::Internal(_)) => e.into_response(),
        Err(e) => back(
            &format!(
                "?verify_error={}",
                cost_model::query::escape(&e.to_string())
            ),
            "verify",
        ),
    }
}
