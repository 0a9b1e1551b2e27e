//! The crypto provider of every outbound HTTPS connection (an LLM
//! connection's `base_url`, an MCP server's `url`): rustls with ring. The
//! HTTP client is built without a provider of its own (so no second crypto
//! library is compiled); whoever builds one installs this first.

/// Installs ring as the process's rustls provider; a provider already
/// installed (by an earlier call, or by whoever embeds us) is kept.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Two threads may race here: the loser's error only says one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// An HTTP client for outbound calls, with the provider installed.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder().user_agent(concat!("seed/", env!("CARGO_PKG_VERSION")))
}
