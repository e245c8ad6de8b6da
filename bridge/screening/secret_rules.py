"""Which credentials a text holds: provider shapes, key=value context, URLs, cards, sentences.

Pure functions. `find_secrets(text)` returns kind ids (`"github-token"`,
`"assigned-secret"`, `"password"`, ...); `LABELS[kind]` says it in words for a
refusal. Nothing here returns or logs the matched value.

Linear time: every pattern starts with a look-behind that refuses to start
inside a run of its own alphabet, and every repetition is bounded, so each
run of characters is tried once per rule; the sentence and key=value rules
look at a bounded window after each keyword. Provider formats are the
providers' published token shapes (cross-checked with gitleaks' rule set).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_B = r"(?<![A-Za-z0-9])"  # starts at a run boundary; '_', '-', '=', quotes may precede
_T = r"(?![A-Za-z0-9_-])"  # ends where the token alphabet ends


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    keywords: tuple[str, ...]  # lower-case literals, one of which must occur (cheap filter)
    pattern: re.Pattern[str]


def _rule(kind: str, keywords: str, pattern: str, flags: int = 0) -> Rule:
    return Rule(kind, tuple(keywords.split()), re.compile(pattern, flags))


RULES: tuple[Rule, ...] = (
    _rule("private-key", "private putty-user-key",
          r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d"),
    _rule("aws-access-key-id", "akia asia abia acca a3t",
          _B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Za-z0-9])"),
    _rule("github-token", "ghp_ gho_ ghs_ ghu_ ghr_ github_pat_",
          _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{30,250})" + _T),
    _rule("gitlab-token", "glpat- glptt- glrt- gldt- glcbt- glimt- gloas- glsoat- glft- gr1348941",
          _B + r"(?:gl(?:pat|ptt|rt|dt|cbt|imt|oas|soat|ft|agent)-[A-Za-z0-9_-]{20,300}"
          r"|GR1348941[A-Za-z0-9_-]{20})" + _T),
    _rule("slack-token", "xox xapp-",
          _B + r"(?:xox[abposerc]-[A-Za-z0-9-]{10,250}|xapp-\d-[A-Za-z0-9-]{20,250})" + _T),
    _rule("slack-webhook", "hooks.slack.com",
          r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,200}", re.I),
    _rule("anthropic-key", "sk-ant-", _B + r"sk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_-]{20,300}" + _T),
    _rule("openai-key", "sk-",
          _B + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,400}"
          r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|(?!ant-)[A-Za-z0-9]{32,200})" + _T),
    _rule("stripe-key", "_live_ _test_ _prod_ whsec_",
          _B + r"(?:(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,255}|whsec_[A-Za-z0-9]{24,100})" + _T),  # noqa: E501
    _rule("google-api-key", "aiza", _B + r"AIza[A-Za-z0-9_-]{35}" + _T),
    _rule("google-oauth-secret", "gocspx-", _B + r"GOCSPX-[A-Za-z0-9_-]{28}" + _T),
    _rule("google-oauth-token", "ya29.", _B + r"ya29\.[A-Za-z0-9_-]{30,2000}" + _T),
    _rule("twilio-key", "sk", _B + r"SK[0-9a-fA-F]{32}" + _T),
    _rule("sendgrid-key", "sg.", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _T),
    _rule("npm-token", "npm_", _B + r"npm_[A-Za-z0-9]{36}" + _T),
    _rule("pypi-token", "pypi-", _B + r"pypi-AgE[A-Za-z0-9_-]{50,400}" + _T),
    _rule("digitalocean-token", "_v1_", _B + r"do[opr]_v1_[a-f0-9]{64}" + _T),
    _rule("shopify-token", "shpat_ shpss_ shpca_ shppa_",
          _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _T),
    _rule("mailgun-key", "key-", _B + r"key-[a-f0-9]{32}" + _T),
    _rule("mailchimp-key", "-us", _B + r"[a-f0-9]{32}-us\d{1,2}(?![A-Za-z0-9])"),
    _rule("heroku-key", "hrku-", _B + r"HRKU-[A-Za-z0-9_-]{50,70}" + _T),
    _rule("discord-bot-token", ".",
          _B + r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _T),
    _rule("discord-webhook", "/api/webhooks/",
          r"discord(?:app)?\.com/api/webhooks/\d{17,20}/[A-Za-z0-9_-]{60,80}", re.I),
    _rule("telegram-bot-token", ":", r"(?<![0-9])\d{8,10}:[A-Za-z0-9_-]{35}" + _T),
    _rule("huggingface-token", "hf_ api_org_", _B + r"(?:hf_|api_org_)[A-Za-z]{34}" + _T),
    _rule("databricks-token", "dapi", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _T),
    _rule("atlassian-token", "att3 ctt3", _B + r"A[TC]CTT3[A-Za-z0-9_=-]{150,300}|ATATT3[A-Za-z0-9_=-]{150,300}"),  # noqa: E501
    _rule("square-token", "eaaa sq0",
          _B + r"(?:EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{22,43})" + _T),
    _rule("braintree-token", "access_token$", r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}"),  # noqa: E501
    _rule("linear-key", "lin_api_", _B + r"lin_api_[A-Za-z0-9]{40}" + _T),
    _rule("notion-token", "ntn_ secret_", _B + r"(?:ntn_\d{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})" + _T),  # noqa: E501
    _rule("postman-key", "pmak-", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _T),
    _rule("vault-token", "hvs. hvb. hvr.", _B + r"hv[sbr]\.[A-Za-z0-9_-]{24,400}" + _T),
    _rule("pulumi-token", "pul-", _B + r"pul-[a-f0-9]{40}" + _T),
    _rule("grafana-token", "glsa_ glc_",
          _B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})" + _T),
    _rule("newrelic-key", "nrak- nrjs- nrii-", _B + r"NR(?:AK|JS|II)-[A-Za-z0-9]{19,27}" + _T),
    _rule("supabase-token", "sbp_ sb_secret_", _B + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,80})" + _T),  # noqa: E501
    _rule("docker-token", "dckr_pat_", _B + r"dckr_pat_[A-Za-z0-9_-]{27}" + _T),
    _rule("alibaba-key", "ltai", _B + r"LTAI[A-Za-z0-9]{20}" + _T),
    _rule("groq-key", "gsk_", _B + r"gsk_[A-Za-z0-9]{52}" + _T),
    _rule("replicate-token", "r8_", _B + r"r8_[A-Za-z0-9]{37}" + _T),
    _rule("perplexity-key", "pplx-", _B + r"pplx-[A-Za-z0-9]{48}" + _T),
    _rule("xai-key", "xai-", _B + r"xai-[A-Za-z0-9]{80}" + _T),
    _rule("rubygems-key", "rubygems_", _B + r"rubygems_[a-f0-9]{48}" + _T),
    _rule("age-key", "age-secret-key-1", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _rule("azure-ad-secret", "q~", r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}" + _T),  # noqa: E501
    _rule("facebook-token", "eaa", _B + r"EAA[A-Za-z0-9]{100,400}" + _T),
    _rule("tailscale-key", "tskey-", _B + r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9-]{20,120}" + _T),  # noqa: E501
    _rule("pinecone-key", "pcsk_", _B + r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,80}" + _T),
    _rule("sentry-token", "sntrys_ sntryu_", _B + r"sntry[su]_[A-Za-z0-9+/=_-]{40,400}"),
    _rule("figma-token", "figd_", _B + r"figd_[A-Za-z0-9_-]{40,60}" + _T),
    _rule("fly-token", "fo1_ fm2_", _B + r"(?:fo1_[A-Za-z0-9_-]{43}|fm2_[A-Za-z0-9+/=_-]{40,2000})"),  # noqa: E501
    _rule("jwt", "eyj",
          r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,4000}\.eyJ[A-Za-z0-9_-]{8,8000}\.[A-Za-z0-9_-]{8,2000}"),
    _rule("url-credentials", "://",
          r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@?#]{0,128}+:"
          r"(?![0-9]{1,5}[/?#\s])[^\s/@?#]{1,256}+@"),
    _rule("url-credentials", "-u --user", r"(?<!\S)(?:-u|--user)[ \t]{1,4}[^\s:]{1,64}:[^\s]{3,128}"),  # noqa: E501
    _rule("bearer-token", "bearer", r"(?i)(?<![A-Za-z])bearer[ \t]{1,4}[A-Za-z0-9._~+/=-]{16,4000}"),  # noqa: E501
    _rule("basic-auth", "basic", r"(?i)authorization:[ \t]{0,4}basic[ \t]{1,4}[A-Za-z0-9+/=]{8,2000}"),  # noqa: E501
)  # fmt: skip

LABELS: dict[str, str] = {
    "private-key": "a private key",
    "aws-access-key-id": "an AWS access key id",
    "github-token": "a GitHub token",
    "gitlab-token": "a GitLab token",
    "slack-token": "a Slack token",
    "slack-webhook": "a Slack webhook URL",
    "anthropic-key": "an Anthropic API key",
    "openai-key": "an OpenAI-style API key",
    "stripe-key": "a Stripe key",
    "google-api-key": "a Google API key",
    "google-oauth-secret": "a Google OAuth client secret",
    "google-oauth-token": "a Google OAuth access token",
    "twilio-key": "a Twilio API key",
    "sendgrid-key": "a SendGrid API key",
    "npm-token": "an npm token",
    "pypi-token": "a PyPI token",
    "digitalocean-token": "a DigitalOcean token",
    "shopify-token": "a Shopify token",
    "mailgun-key": "a Mailgun key",
    "mailchimp-key": "a Mailchimp API key",
    "heroku-key": "a Heroku API key",
    "discord-bot-token": "a Discord bot token",
    "discord-webhook": "a Discord webhook URL",
    "telegram-bot-token": "a Telegram bot token",
    "huggingface-token": "a Hugging Face token",
    "databricks-token": "a Databricks token",
    "atlassian-token": "an Atlassian API token",
    "square-token": "a Square token",
    "braintree-token": "a PayPal Braintree token",
    "linear-key": "a Linear API key",
    "notion-token": "a Notion token",
    "postman-key": "a Postman API key",
    "vault-token": "a HashiCorp Vault token",
    "pulumi-token": "a Pulumi token",
    "grafana-token": "a Grafana token",
    "newrelic-key": "a New Relic key",
    "supabase-token": "a Supabase token",
    "docker-token": "a Docker Hub token",
    "alibaba-key": "an Alibaba Cloud key",
    "groq-key": "a Groq API key",
    "replicate-token": "a Replicate token",
    "perplexity-key": "a Perplexity API key",
    "xai-key": "an xAI API key",
    "rubygems-key": "a RubyGems key",
    "age-key": "an age secret key",
    "azure-ad-secret": "an Azure client secret",
    "facebook-token": "a Facebook access token",
    "tailscale-key": "a Tailscale key",
    "pinecone-key": "a Pinecone API key",
    "sentry-token": "a Sentry token",
    "figma-token": "a Figma token",
    "fly-token": "a Fly.io token",
    "jwt": "a JSON web token",
    "url-credentials": "a URL or command line with a password in it",
    "bearer-token": "a bearer token",
    "basic-auth": "HTTP basic credentials",
    "assigned-secret": "a password or key after a name such as PASSWORD= or api_key:",
    "card-number": "a payment card number",
    "password": "a password",
    "pin": "a PIN or door code",
}


def provider_kinds(text: str) -> list[str]:
    lowered = text.lower()
    kinds: list[str] = []
    for rule in RULES:
        if rule.kind in kinds or not any(k in lowered for k in rule.keywords):
            continue
        if rule.pattern.search(text):
            kinds.append(rule.kind)
    return kinds
