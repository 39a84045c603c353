//! Injected faults at the HTTP side: the answer sent instead of handling a request, and an
//! answer lost after handling it.

use axum::response::{IntoResponse, Response};

use super::super::error::ApiError;
use super::super::faults::Decision;
use super::App;
use super::conn::ConnKill;

/// Whether the answer of a handled request is to be lost (see [`lose_answer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    Send,
    Lose,
}

/// Applies the operation's faults; `Err` is the response to send instead of handling it.
pub(super) async fn inject(
    app: &App,
    op: &str,
    kill: Option<&ConnKill>,
) -> Result<Answer, ApiError> {
    let (delay, decision) = app.faults.decide(op);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match decision {
        Decision::Proceed => Ok(Answer::Send),
        Decision::LoseAnswer => Ok(Answer::Lose),
        Decision::Throttle => Err(ApiError::Throttled),
        Decision::ServerError => Err(ApiError::Server(
            "Injected fault: internal server error".into(),
        )),
        Decision::AccessDenied => Err(ApiError::AccessDenied(format!(
            "Injected fault: User: arn:aws:iam::{}:user/test is not authorized to perform: batch:{op}",
            app.account
        ))),
        Decision::ExpiredToken => Err(ApiError::ExpiredToken(
            "Injected fault: The security token included in the request is expired".into(),
        )),
        Decision::Drop => match kill {
            Some(kill) => {
                kill.0.notify_one();
                // The connection task drops this request with the connection.
                std::future::pending::<()>().await;
                Ok(Answer::Send)
            }
            None => Err(ApiError::Server(
                "Injected fault: connection dropped".into(),
            )),
        },
    }
}

/// The request has been handled (the change made); its answer is lost: the connection closes
/// without it (a 500 where the connection cannot be closed).
pub(super) async fn lose_answer(kill: Option<&ConnKill>) -> Response {
    match kill {
        Some(kill) => {
            kill.0.notify_one();
            std::future::pending::<()>().await;
            ApiError::Server("Injected fault: answer lost".into()).into_response()
        }
        None => ApiError::Server("Injected fault: answer lost".into()).into_response(),
    }
}
