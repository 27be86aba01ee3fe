//! The S3 client's settings, checked before a client is built: values that
//! `object_store` would take and then panic over when it makes a request
//! (an endpoint it cannot make a URL of, a key id, token or region that
//! cannot go in a header). Each refusal is one line naming the variable or
//! setting the value came from.

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};

use retile_plan::StreamError;

use crate::error::quoted;

/// The endpoint requests go to: `aws_endpoint_url_s3` where set, else
/// `aws_endpoint` (as `object_store` chooses); `None` for AWS itself.
pub(crate) fn endpoint(builder: &AmazonS3Builder) -> Option<String> {
    builder
        .get_config_value(&AmazonS3ConfigKey::S3Endpoint)
        .or_else(|| builder.get_config_value(&AmazonS3ConfigKey::Endpoint))
}

/// Refuses, naming where it came from, a setting of `builder` (made from
/// the environment, then `config`) the client cannot use: an endpoint
/// that is not `http[s]://HOST[:PORT][/PATH]` (1 to 65535, no spaces,
/// credentials, query or fragment), a region that cannot name a host
/// (without an endpoint) or go in a header, an access key id or session
/// token that cannot go in a header.
pub(crate) fn check(
    builder: &AmazonS3Builder,
    config: &[(String, String)],
) -> Result<(), StreamError> {
    let refuse = |key: AmazonS3ConfigKey, value: &str, why: String| {
        Err(StreamError::Invalid(format!(
            "{} is {}: {why}",
            source(key, config),
            quoted(value)
        )))
    };
    let urls = [
        AmazonS3ConfigKey::S3Endpoint,
        AmazonS3ConfigKey::Endpoint,
        AmazonS3ConfigKey::MetadataEndpoint,
        AmazonS3ConfigKey::StsEndpoint,
    ];
    for key in urls {
        if let Some(value) = builder.get_config_value(&key) {
            if let Err(why) = check_url(&value) {
                return refuse(key, &value, why);
            }
        }
    }
    let in_host = endpoint(builder).is_none();
    for key in [AmazonS3ConfigKey::Region, AmazonS3ConfigKey::DefaultRegion] {
        if let Some(value) = builder.get_config_value(&key) {
            if let Err(why) = check_region(&value, in_host) {
                return refuse(key, &value, why);
            }
        }
    }
    for key in [AmazonS3ConfigKey::AccessKeyId, AmazonS3ConfigKey::Token] {
        if let Some(value) = builder.get_config_value(&key) {
            if let Err(why) = check_header_text(&value) {
                return refuse(key, &value, why);
            }
        }
    }
    Ok(())
}

/// Where the setting `key` came from: the last of the user's settings
/// naming it, else the `AWS_*` variables that do.
fn source(key: AmazonS3ConfigKey, config: &[(String, String)]) -> String {
    let names = |k: &str| k.to_ascii_lowercase().parse::<AmazonS3ConfigKey>().ok() == Some(key);
    if let Some((given, _)) = config.iter().rev().find(|(k, _)| names(k)) {
        return format!("the S3 setting '{given}'");
    }
    let mut vars: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("AWS_") && names(k))
        .collect();
    vars.sort();
    match vars.is_empty() {
        true => format!("the S3 setting '{}'", key.as_ref()),
        false => vars.join(" or "),
    }
}

/// Why `value` cannot be an endpoint, if it cannot.
fn check_url(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("empty; unset it to reach AWS, or give the server's URL (e.g. https://s3.example.org or http://127.0.0.1:9000)".into());
    }
    if let Some(c) = value.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "a URL holds no spaces or control characters, and this one holds U+{:04X}",
            u32::from(c)
        ));
    }
    if !(value.starts_with("http://") || value.starts_with("https://")) {
        let example = match value.contains("://") {
            true => "e.g. https://s3.example.org".to_owned(),
            false => format!("e.g. http://{value} or https://{value}"),
        };
        return Err(format!(
            "an endpoint starts with http:// or https:// ({example})"
        ));
    }
    let url = url::Url::parse(value).map_err(|e| match e {
        url::ParseError::InvalidPort => "the port is not a number from 1 to 65535".to_owned(),
        url::ParseError::EmptyHost => "it names no host".to_owned(),
        e => format!("it is not a URL ({e})"),
    })?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err("it names no host".into());
    }
    if url.port() == Some(0) {
        return Err("the port is not a number from 1 to 65535".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("credentials in the URL are not used; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("an endpoint has no query ('?') or fragment ('#')".into());
    }
    // the client makes its requests' URLs from the text as given
    let request = format!("{}/bucket/key", value.trim_end_matches('/'));
    match request.parse::<http::Uri>() {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("the HTTP client cannot make a URL of it ({e})")),
    }
}

/// Why `value` cannot be a region; `in_host`: it names the endpoint's host
/// (`s3.REGION.amazonaws.com`).
fn check_region(value: &str, in_host: bool) -> Result<(), String> {
    check_header_text(value)?;
    let hostname = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
    match in_host && !value.chars().all(hostname) {
        true => Err("without an endpoint the region names AWS's host (s3.REGION.amazonaws.com), so it holds letters, digits, '-' and '.' only".into()),
        false => Ok(()),
    }
}

/// Why `value` cannot go in a request header, if it cannot.
fn check_header_text(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("empty".into());
    }
    match value.chars().find(|c| !c.is_ascii_graphic()) {
        Some(c) => Err(format!(
            "it goes in a request header, which takes visible ASCII characters only, and it holds U+{:04X}",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{check_region, check_url};

    #[test]
    fn endpoints_the_client_cannot_use_are_refused_with_the_reason() {
        for (value, why) in [
            ("", "empty"),
            ("localhost:9000", "starts with http:// or https://"),
            ("http://127.0.0.1:9000 ", "U+0020"),
            ("http://127.0.0.1:99999", "1 to 65535"),
            ("http://127.0.0.1:0", "1 to 65535"),
            ("https://", "no host"),
            ("ftp://s3.example.org", "starts with http"),
            ("HTTP://s3.example.org", "starts with http"),
            ("http://user:pw@s3.example.org", "credentials"),
            ("http://s3.example.org/?x=1", "query"),
            ("http://exämple.org", "cannot make a URL"),
            ("http://s3.example.org\n", "U+000A"),
        ] {
            let err = check_url(value).expect_err(value);
            assert!(err.contains(why), "{value:?}: {err}");
        }
        for value in [
            "http://127.0.0.1:9000",
            "https://s3.example.org",
            "https://s3.example.org/",
            "http://[::1]:9000",
            "https://s3.example.org/base/path",
        ] {
            assert_eq!(check_url(value), Ok(()), "{value}");
        }
    }

    #[test]
    fn regions_go_in_a_header_and_without_an_endpoint_in_the_host() {
        assert!(check_region("us-east-1", true).is_ok());
        assert!(check_region("garage_1", false).is_ok());
        assert!(check_region("garage_1", true).is_err());
        assert!(check_region("us east", false).is_err());
        assert!(check_region("", false).is_err());
        assert!(check_region("régión", false).is_err());
    }
}
