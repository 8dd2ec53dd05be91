//! Server functions of the pages. Each is a thin wrapper over the service
//! functions in `store` (the JSON API calls the same ones).

use crate::api::{PlanList, PlanPage};
use leptos::prelude::*;

#[cfg(feature = "ssr")]
mod ssr {
    use crate::store::{ServiceError, SharedStore};
    use leptos::prelude::*;

    pub fn store() -> Result<SharedStore, ServerFnError> {
        use_context::<SharedStore>().ok_or_else(|| ServerFnError::new("no plan store configured"))
    }

    /// Input errors are shown as they are; anything else is logged and
    /// reported generically.
    pub fn to_fn_error(e: ServiceError) -> ServerFnError {
        match e {
            ServiceError::Input(e) => ServerFnError::new(e.to_string()),
            other => {
                leptos::logging::error!("plan store: {other}");
                ServerFnError::new("the plan store failed; try again")
            }
        }
    }
}

/// Saves the planner's current plan (its URL query `q`) and redirects to `/p/{id}`.
#[server(prefix = "/_fn", endpoint = "save_plan")]
pub async fn save_plan(
    title: String,
    notes: String,
    author: String,
    q: String,
    forked_from: String,
) -> Result<String, ServerFnError> {
    let store = ssr::store()?;
    let new = crate::api::NewPlan::from_form(&title, &notes, &author, &q, &forked_from)
        .map_err(|e| ServerFnError::new(e.to_string()))?;
    let id = crate::store::save(&*store, new)
        .await
        .map_err(ssr::to_fn_error)?;
    leptos_axum::redirect(&format!("/p/{id}"));
    Ok(id)
}

/// A saved plan and its verifications (`None` for an unknown id).
#[server(prefix = "/_fn", endpoint = "get_plan")]
pub async fn get_plan(id: String) -> Result<Option<PlanPage>, ServerFnError> {
    let store = ssr::store()?;
    let Some(saved) = crate::store::load(&*store, &id)
        .await
        .map_err(ssr::to_fn_error)?
    else {
        return Ok(None);
    };
    let traces = crate::store::list_traces(&*store, &id)
        .await
        .map_err(ssr::to_fn_error)?;
    Ok(Some(PlanPage { saved, traces }))
}

/// One page of saved plans matching `query`, newest first.
#[server(prefix = "/_fn", endpoint = "list_plans")]
pub async fn list_plans(query: String, page: u32) -> Result<PlanList, ServerFnError> {
    let store = ssr::store()?;
    crate::store::list(&*store, &query, page)
        .await
        .map_err(ssr::to_fn_error)
}
