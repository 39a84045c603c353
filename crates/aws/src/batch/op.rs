//! The AWS Batch operations quotatop calls, by name: what the pacer paces one by one and what
//! an error names.

use std::fmt;

/// One AWS Batch API operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    CreateQuotaShare,
    DeleteQuotaShare,
    DescribeJobQueues,
    DescribeSchedulingPolicies,
    DescribeServiceEnvironments,
    DescribeServiceJob,
    GetJobQueueSnapshot,
    ListQuotaShares,
    ListServiceJobs,
    SubmitServiceJob,
    TagResource,
    TerminateServiceJob,
    TerminateServiceJobs,
    UpdateQuotaShare,
    UpdateServiceJob,
    /// CloudWatch Logs.
    DescribeLogStreams,
    FilterLogEvents,
    GetLogEvents,
    /// S3.
    ListObjectsV2,
    /// SQS.
    CreateQueue,
    DeleteMessage,
    DeleteQueue,
    GetQueueAttributes,
    GetQueueUrl,
    ReceiveMessage,
    SetQueueAttributes,
    /// EventBridge.
    DeleteRule,
    DescribeRule,
    ListTargetsByRule,
    PutRule,
    PutTargets,
    RemoveTargets,
    /// CloudTrail.
    LookupEvents,
    /// Not an API call: the poller's refresh as a whole, when its deadline cuts calls short.
    Refresh,
}

impl Op {
    /// The operation's API name, as AWS documents it and errors quote it.
    pub const fn name(self) -> &'static str {
        match self {
            Op::CreateQuotaShare => "CreateQuotaShare",
            Op::DeleteQuotaShare => "DeleteQuotaShare",
            Op::DescribeJobQueues => "DescribeJobQueues",
            Op::DescribeSchedulingPolicies => "DescribeSchedulingPolicies",
            Op::DescribeServiceEnvironments => "DescribeServiceEnvironments",
            Op::DescribeServiceJob => "DescribeServiceJob",
            Op::GetJobQueueSnapshot => "GetJobQueueSnapshot",
            Op::ListQuotaShares => "ListQuotaShares",
            Op::ListServiceJobs => "ListServiceJobs",
            Op::SubmitServiceJob => "SubmitServiceJob",
            Op::TagResource => "TagResource",
            Op::TerminateServiceJob => "TerminateServiceJob",
            Op::TerminateServiceJobs => "TerminateServiceJobs",
            Op::UpdateQuotaShare => "UpdateQuotaShare",
            Op::UpdateServiceJob => "UpdateServiceJob",
            Op::DescribeLogStreams => "DescribeLogStreams",
            Op::FilterLogEvents => "FilterLogEvents",
            Op::GetLogEvents => "GetLogEvents",
            Op::ListObjectsV2 => "ListObjectsV2",
            Op::CreateQueue => "CreateQueue",
            Op::DeleteMessage => "DeleteMessage",
            Op::DeleteQueue => "DeleteQueue",
            Op::GetQueueAttributes => "GetQueueAttributes",
            Op::GetQueueUrl => "GetQueueUrl",
            Op::ReceiveMessage => "ReceiveMessage",
            Op::SetQueueAttributes => "SetQueueAttributes",
            Op::DeleteRule => "DeleteRule",
            Op::DescribeRule => "DescribeRule",
            Op::LookupEvents => "LookupEvents",
            Op::ListTargetsByRule => "ListTargetsByRule",
            Op::PutRule => "PutRule",
            Op::PutTargets => "PutTargets",
            Op::RemoveTargets => "RemoveTargets",
            Op::Refresh => "refresh",
        }
    }
}

impl Op {
    /// The service the operation belongs to, as errors name it.
    pub const fn service(self) -> &'static str {
        match self {
            Op::DescribeLogStreams | Op::FilterLogEvents | Op::GetLogEvents => "CloudWatch Logs",
            Op::ListObjectsV2 => "S3",
            Op::CreateQueue
            | Op::DeleteMessage
            | Op::DeleteQueue
            | Op::GetQueueAttributes
            | Op::GetQueueUrl
            | Op::ReceiveMessage
            | Op::SetQueueAttributes => "SQS",
            Op::DeleteRule
            | Op::DescribeRule
            | Op::ListTargetsByRule
            | Op::PutRule
            | Op::PutTargets
            | Op::RemoveTargets => "EventBridge",
            Op::LookupEvents => "CloudTrail",
            _ => "AWS Batch",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
