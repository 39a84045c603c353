//! Every operation the emulator serves and how the router reaches it: the one table both the
//! router (`server.rs`) and the fault spec ([`OPERATIONS`]) read.

use axum::response::Response;

use super::account::{Account, Key};
use super::error::ApiError;
use super::state::QueueWorld;
use super::{
    ops_cloudtrail, ops_eventbridge, ops_jobs, ops_list_jobs, ops_logs, ops_queue, ops_resources,
    ops_setup, ops_shares, ops_sqs, wire,
};

/// An operation on one region of the account.
type OpFn = fn(&mut Account, &[u8]) -> Result<Response, ApiError>;
/// An operation on one job queue, found by [`Key`] in the request.
type QueueOpFn = fn(&mut QueueWorld, &[u8]) -> Result<Response, ApiError>;
/// An operation of a JSON-protocol service other than Batch and Logs (EventBridge, SQS,
/// CloudTrail) on one region: its answer's JSON.
pub(super) type JsonFn = fn(&mut Account, &[u8]) -> Result<serde_json::Value, ApiError>;

/// The JSON-protocol services served on `POST /` beside CloudWatch Logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonService {
    /// EventBridge: awsJson1_1, `X-Amz-Target: AWSEvents.<Op>`, signed for `events`.
    Events,
    /// SQS: awsJson1_0, `X-Amz-Target: AmazonSQS.<Op>`, signed for `sqs`.
    Sqs,
    /// CloudTrail: awsJson1_1, `X-Amz-Target: com.amazonaws.cloudtrail.v20131101.
    /// CloudTrail_20131101.<Op>` (botocore's) or `CloudTrail_20131101.<Op>` (the Rust SDK's),
    /// signed for `cloudtrail`.
    CloudTrail,
}

impl JsonService {
    /// The `X-Amz-Target` prefix before the operation's name.
    pub fn target_prefix(self) -> &'static str {
        match self {
            Self::Events => "AWSEvents.",
            Self::Sqs => "AmazonSQS.",
            Self::CloudTrail => "com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101.",
        }
    }
    /// Every `X-Amz-Target` prefix the SDKs write before the operation's name (AWS takes
    /// both of CloudTrail's).
    pub fn target_prefixes(self) -> &'static [&'static str] {
        match self {
            Self::Events => &["AWSEvents."],
            Self::Sqs => &["AmazonSQS."],
            Self::CloudTrail => &[
                "com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101.",
                "CloudTrail_20131101.",
            ],
        }
    }
    /// The service a request's SigV4 credential scope names.
    pub fn signing_name(self) -> &'static str {
        match self {
            Self::Events => "events",
            Self::Sqs => "sqs",
            Self::CloudTrail => "cloudtrail",
        }
    }
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Sqs => "application/x-amz-json-1.0",
            Self::Events | Self::CloudTrail => "application/x-amz-json-1.1",
        }
    }
    /// An error named as the service names it.
    pub fn error(self, e: ApiError) -> ApiError {
        match self {
            Self::Events => ops_eventbridge::events_error(e),
            Self::Sqs => ops_sqs::sqs_error(e),
            Self::CloudTrail => ops_cloudtrail::trail_error(e),
        }
    }
    pub const ALL: [JsonService; 3] = [Self::Events, Self::Sqs, Self::CloudTrail];
}

/// Checks a request's body against its operation's shape before the queue is looked up, so a
/// malformed request is told so rather than that its job or queue does not exist.
type ShapeFn = fn(&[u8]) -> Result<(), ApiError>;

fn shape<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<(), ApiError> {
    wire::parse::<T>(body).map(|_| ())
}

/// How the router reaches an operation.
#[derive(Clone, Copy)]
pub(super) enum Route {
    /// `POST /v1/<op>`, the request's JSON body handed to the function with the region's world.
    Post(OpFn),
    /// `POST /v1/<op>` on the job queue the request names (by [`Key`]), once the body has the
    /// operation's shape.
    Queue(Key, ShapeFn, QueueOpFn),
    /// `/v1/tags/{resourceArn}`, where the method picks the operation ([`tags_handler`]).
    Tags,
    /// CloudWatch Logs: `POST /` with `X-Amz-Target: Logs_20140328.<Op>` (JSON 1.1).
    Logs(ops_logs::LogsFn),
    /// S3, path-style: the method and path pick the operation ([`super::ops_s3::operation`]).
    S3,
    /// EventBridge, SQS or CloudTrail: `POST /` with the service's `X-Amz-Target`.
    Json(JsonService, JsonFn),
}

/// Declares the table: each row is an operation's lowercase name (as in the URL path) and its
/// [`Route`]; [`OPERATIONS`] is made from the same rows, so neither has a length kept by hand.
macro_rules! routes {
    ($($name:literal => $route:expr),+ $(,)?) => {
        /// Every operation the emulator serves, by its lowercase name as in the URL path: the
        /// one table both the router and the fault spec ([`OPERATIONS`]) read.
        const ROUTES: &[(&str, Route)] = &[$(($name, $route)),+];

        /// The lowercase names of every operation the emulator serves (the names of
        /// [`ROUTES`]).
        pub const OPERATIONS: &[&str] = &[$($name),+];
    };
}

routes! {
    "createschedulingpolicy" => Route::Post(ops_resources::create_policy),
    "updateschedulingpolicy" => Route::Post(ops_resources::update_policy),
    "deleteschedulingpolicy" => Route::Post(ops_resources::delete_policy),
    "describeschedulingpolicies" => Route::Post(ops_resources::describe_policies),
    "listschedulingpolicies" => Route::Post(ops_resources::list_policies),
    "createserviceenvironment" => Route::Post(ops_setup::create_environment),
    "updateserviceenvironment" => Route::Post(ops_setup::update_environment),
    "deleteserviceenvironment" => Route::Post(ops_setup::delete_environment),
    "describeserviceenvironments" => Route::Post(ops_resources::describe_environments),
    "createjobqueue" => Route::Post(ops_setup::create_queue),
    "updatejobqueue" => Route::Post(ops_setup::update_queue),
    "deletejobqueue" => Route::Post(ops_setup::delete_queue),
    "describejobqueues" => Route::Post(ops_resources::describe_queues),
    "createquotashare" => Route::Queue(
        Key::JobQueue,
        shape::<wire::CreateQuotaShareRequest>,
        ops_shares::create,
    ),
    "updatequotashare" => Route::Queue(
        Key::ShareArn,
        shape::<wire::UpdateQuotaShareRequest>,
        ops_shares::update,
    ),
    "describequotashare" => Route::Queue(
        Key::ShareArn,
        shape::<wire::QuotaShareArnRequest>,
        ops_shares::describe,
    ),
    "listquotashares" => Route::Queue(
        Key::JobQueue,
        shape::<wire::ListQuotaSharesRequest>,
        ops_shares::list,
    ),
    "deletequotashare" => Route::Queue(
        Key::ShareArn,
        shape::<wire::QuotaShareArnRequest>,
        ops_shares::delete,
    ),
    "submitservicejob" => Route::Queue(
        Key::JobQueue,
        shape::<wire::SubmitServiceJobRequest>,
        ops_jobs::submit,
    ),
    "listservicejobs" => Route::Queue(
        Key::JobQueue,
        shape::<wire::ListServiceJobsRequest>,
        ops_list_jobs::list,
    ),
    "describeservicejob" => Route::Queue(
        Key::JobId,
        shape::<wire::JobIdRequest>,
        ops_jobs::describe,
    ),
    "updateservicejob" => Route::Queue(
        Key::JobId,
        shape::<wire::UpdateServiceJobRequest>,
        ops_jobs::update,
    ),
    "terminateservicejob" => Route::Queue(
        Key::JobId,
        shape::<wire::TerminateServiceJobRequest>,
        ops_jobs::terminate,
    ),
    "terminateservicejobs" => Route::Post(ops_jobs::terminate_many),
    "getjobqueuesnapshot" => Route::Queue(
        Key::JobQueue,
        shape::<wire::GetJobQueueSnapshotRequest>,
        ops_queue::snapshot,
    ),
    "tagresource" => Route::Tags,
    "untagresource" => Route::Tags,
    "listtagsforresource" => Route::Tags,
    "describelogstreams" => Route::Logs(ops_logs::describe_streams),
    "getlogevents" => Route::Logs(ops_logs::get_events),
    "filterlogevents" => Route::Logs(ops_logs::filter_events),
    "listobjectsv2" => Route::S3,
    "headobject" => Route::S3,
    "getobject" => Route::S3,
    "putrule" => Route::Json(JsonService::Events, ops_eventbridge::put_rule),
    "describerule" => Route::Json(JsonService::Events, ops_eventbridge::describe_rule),
    "listrules" => Route::Json(JsonService::Events, ops_eventbridge::list_rules),
    "deleterule" => Route::Json(JsonService::Events, ops_eventbridge::delete_rule),
    "puttargets" => Route::Json(JsonService::Events, ops_eventbridge::put_targets),
    "listtargetsbyrule" => Route::Json(JsonService::Events, ops_eventbridge::list_targets_by_rule),
    "removetargets" => Route::Json(JsonService::Events, ops_eventbridge::remove_targets),
    "createqueue" => Route::Json(JsonService::Sqs, ops_sqs::create_queue),
    "getqueueurl" => Route::Json(JsonService::Sqs, ops_sqs::get_queue_url),
    "getqueueattributes" => Route::Json(JsonService::Sqs, ops_sqs::get_queue_attributes),
    "setqueueattributes" => Route::Json(JsonService::Sqs, ops_sqs::set_queue_attributes),
    "deletequeue" => Route::Json(JsonService::Sqs, ops_sqs::delete_queue),
    "receivemessage" => Route::Json(JsonService::Sqs, ops_sqs::receive_message),
    "deletemessage" => Route::Json(JsonService::Sqs, ops_sqs::delete_message),
    "deletemessagebatch" => Route::Json(JsonService::Sqs, ops_sqs::delete_message_batch),
    "changemessagevisibility" => Route::Json(JsonService::Sqs, ops_sqs::change_message_visibility),
    "lookupevents" => Route::Json(JsonService::CloudTrail, ops_cloudtrail::lookup_events),
}

/// How `POST /v1/<op>` is served, if `op` is an operation.
pub(super) fn operation(op: &str) -> Option<Route> {
    ROUTES
        .iter()
        .find(|&&(name, route)| name == op && matches!(route, Route::Post(_) | Route::Queue(..)))
        .map(|&(_, route)| route)
}

/// The CloudWatch Logs operation named `op` (lowercase), if the emulator serves it.
pub(super) fn logs_operation(op: &str) -> Option<ops_logs::LogsFn> {
    ROUTES.iter().find_map(|&(name, route)| match route {
        Route::Logs(f) if name == op => Some(f),
        _ => None,
    })
}

/// The operation of `service` named `op` (lowercase), if the emulator serves it.
pub(super) fn json_operation(service: JsonService, op: &str) -> Option<JsonFn> {
    ROUTES.iter().find_map(|&(name, route)| match route {
        Route::Json(s, f) if s == service && name == op => Some(f),
        _ => None,
    })
}

/// The API names of `service`'s operations (for an error naming what is served).
pub(super) fn json_operations(service: JsonService) -> Vec<&'static str> {
    ROUTES
        .iter()
        .filter(|(_, route)| matches!(route, Route::Json(s, _) if *s == service))
        .map(|&(name, _)| name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_names_each_operation_once() {
        let mut names = OPERATIONS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ROUTES.len());
        assert!(operation("listservicejobs").is_some());
        // The tag operations are routed by method under /v1/tags/, not as POST /v1/<op>.
        assert!(operation("tagresource").is_none());
        assert!(operation("nosuchop").is_none());
        // Logs and S3 operations are told apart by their service, not served on /v1/.
        assert!(operation("getlogevents").is_none());
        assert!(operation("listobjectsv2").is_none());
        assert!(logs_operation("getlogevents").is_some());
        assert!(logs_operation("listservicejobs").is_none());
        assert!(json_operation(JsonService::Sqs, "receivemessage").is_some());
        assert!(json_operation(JsonService::Events, "receivemessage").is_none());
        assert!(operation("putrule").is_none());
    }
}
