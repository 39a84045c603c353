//! CloudWatch Logs answers whose bytes are not all UTF-8. A training script can print any
//! bytes; the service passes them on, and one such event made the whole answer unreadable to
//! the SDK's JSON reader (which `quotatop logs` then misnamed "an empty body"). The logs
//! client's connector reads each answer whole (the SDK does too) and, only when it is not
//! UTF-8, replaces each invalid sequence with U+FFFD — inside a JSON string that keeps the
//! JSON valid — counting it in [`WireStats`] so the reader can say so.

use aws_sdk_cloudwatchlogs::config::http::{HttpRequest, HttpResponse};
use aws_sdk_cloudwatchlogs::config::{HttpClient, RuntimeComponents, SharedHttpClient};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::byte_stream::ByteStream;

use super::stats::WireStats;

/// `inner`, with each answer made UTF-8.
#[derive(Debug)]
pub(crate) struct LossyClient {
    pub inner: SharedHttpClient,
    pub stats: WireStats,
}

impl HttpClient for LossyClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(LossyConnector {
            inner: self.inner.http_connector(settings, components),
            stats: self.stats.clone(),
        })
    }
}

#[derive(Debug)]
struct LossyConnector {
    inner: SharedHttpConnector,
    stats: WireStats,
}

impl HttpConnector for LossyConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let answer = self.inner.call(request);
        let stats = self.stats.clone();
        HttpConnectorFuture::new(async move {
            let mut response: HttpResponse = answer.await?;
            let body = ByteStream::new(response.take_body())
                .collect()
                .await
                .map_err(|e| ConnectorError::io(Box::new(e)))?
                .into_bytes();
            let body = match utf8(&body) {
                None => body,
                Some(fixed) => {
                    stats.not_utf8();
                    response
                        .headers_mut()
                        .insert("content-length", fixed.len().to_string());
                    fixed.into()
                }
            };
            *response.body_mut() = SdkBody::from(body);
            Ok(response)
        })
    }
}

/// `None` when `body` is UTF-8; otherwise the body with each invalid sequence replaced.
pub(crate) fn utf8(body: &[u8]) -> Option<Vec<u8>> {
    match std::str::from_utf8(body) {
        Ok(_) => None,
        Err(_) => Some(String::from_utf8_lossy(body).into_owned().into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bytes_that_are_not_utf8_are_replaced() {
        assert_eq!(utf8(br#"{"message":"ok \u00e9 caf\xc3\xa9"}"#), None);
        let fixed = utf8(b"{\"message\":\"bad \xff\xfe end\"}").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(v["message"], "bad \u{fffd}\u{fffd} end");
    }
}
