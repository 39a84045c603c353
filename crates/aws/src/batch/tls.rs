//! An HTTPS client that trusts a CA bundle (`AWS_CA_BUNDLE`, a profile's `ca_bundle`), as the AWS
//! CLI does: built the way the SDK builds its default client (rustls with aws-lc, proxy settings
//! from the environment), with the bundle as its only trust store.

use std::path::Path;

use aws_sdk_batch::config::SharedHttpClient;
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use aws_smithy_http_client::{Builder, ConnectorBuilder};

use super::error::BatchError;

/// The client, or why the bundle cannot be used (`from` says where its path came from).
pub(crate) fn trusting(path: &Path, from: &str) -> Result<SharedHttpClient, BatchError> {
    let shown = quotatop_model::clean_text(&path.display().to_string());
    let pem =
        quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE).map_err(|e| {
            BatchError::Config(format!(
                "cannot read the CA bundle {shown} ({from}): {e}; fix the path or unset it"
            ))
        })?;
    if !pem.contains("-----BEGIN CERTIFICATE-----") {
        return Err(BatchError::Config(format!(
            "the CA bundle {shown} ({from}) holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        )));
    }
    let context = TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_pem_certificate(pem.into_bytes()))
        .build()
        .map_err(|e| {
            BatchError::Config(format!(
                "the CA bundle {shown} ({from}) cannot be used: {e}"
            ))
        })?;
    Ok(client(Some(context)))
}

/// The client the SDK would build when none is configured (for a client that wraps it).
pub(crate) fn default_client() -> SharedHttpClient {
    client(None)
}

/// rustls with aws-lc and the environment's proxy settings; `context`: its own trust store.
fn client(context: Option<TlsContext>) -> SharedHttpClient {
    Builder::new().build_with_connector_fn(move |settings, components| {
        let mut conn = ConnectorBuilder::default().tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ));
        if let Some(context) = &context {
            conn = conn.tls_context(context.clone());
        }
        conn.set_connector_settings(settings.cloned());
        if let Some(c) = components {
            conn.set_sleep_impl(c.sleep_impl());
        }
        conn.set_proxy_config(Some(ProxyConfig::from_env()));
        conn.build()
    })
}
