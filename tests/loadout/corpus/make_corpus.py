"""Regenerate the secret-screen corpus: `python tests/loadout/corpus/make_corpus.py`.

Every value is drawn from a seeded random generator in the alphabet and length
a provider publishes for its tokens (gitleaks' rule set, provider docs), so the
files hold real *shapes* and no real secret. `secrets.jsonl` must be refused,
`harmless.jsonl` must be kept. One JSON object per line:
{"provider", "kind", "phrasing", "text", "value"}; `kind` is the screen's id of
what it must report, `value` the part a refusal must never echo.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
R = random.Random(20260915)
UP, LO, DIG = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UP + LO + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = UP + "234567"


def rnd(alphabet: str, n: int) -> str:
    while True:
        out = "".join(R.choice(alphabet) for _ in range(n))
        # a token of this kind always mixes classes; keep the sample realistic
        mixed = any(c.isdigit() for c in out) and any(c.isalpha() for c in out)
        if n < 8 or not (set(alphabet) & set(DIG)) or alphabet in (HEX, DIG) or mixed:
            return out


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + "".join(R.choice(DIG) for _ in range(length - len(prefix) - 1))
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            d -= 9 if d > 9 else 0
        total += d
    return body + str((10 - total % 10) % 10)


def jwt() -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    sub = R.randint(10**8, 10**9)
    body = base64.urlsafe_b64encode(f'{{"sub":"{sub}","iat":{R.randint(1.6e9, 1.8e9)}}}'.encode())
    return f"{head}.{body.rstrip(b'=').decode()}.{rnd(B64URL, 43)}"


def pem(label: str, lines: int = 4) -> str:
    body = "\n".join(rnd(B64, 64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def discord_bot() -> str:
    uid = str(R.randint(10**17, 10**18))
    return (
        f"{base64.b64encode(uid.encode()).decode().rstrip('=')}.{rnd(B64URL, 6)}.{rnd(B64URL, 38)}"
    )


# (provider, kind, env name, value maker): tokens with a published, distinctive shape
TOKENS: list[tuple[str, str, str, Callable[[], str]]] = [
    ("aws", "aws-access-key-id", "AWS_ACCESS_KEY_ID", lambda: "AKIA" + rnd(B32, 16)),
    ("aws", "aws-access-key-id", "AWS_ACCESS_KEY_ID", lambda: "ASIA" + rnd(B32, 16)),
    ("github", "github-token", "GITHUB_TOKEN", lambda: "ghp_" + rnd(ALNUM, 36)),
    ("github", "github-token", "GH_TOKEN", lambda: "gho_" + rnd(ALNUM, 36)),
    ("github", "github-token", "GITHUB_TOKEN", lambda: "ghs_" + rnd(ALNUM, 36)),
    ("github", "github-token", "GH_TOKEN", lambda: "ghu_" + rnd(ALNUM, 36)),
    ("github", "github-token", "GITHUB_REFRESH", lambda: "ghr_" + rnd(ALNUM, 36)),
    (
        "github",
        "github-token",
        "GITHUB_PAT",
        lambda: "github_pat_" + rnd(ALNUM, 22) + "_" + rnd(ALNUM, 59),
    ),
    ("gitlab", "gitlab-token", "GITLAB_TOKEN", lambda: "glpat-" + rnd(B64URL, 20)),
    ("gitlab", "gitlab-token", "CI_TRIGGER", lambda: "glptt-" + rnd(HEX, 40)),
    ("gitlab", "gitlab-token", "RUNNER_TOKEN", lambda: "glrt-" + rnd(B64URL, 20)),
    (
        "slack",
        "slack-token",
        "SLACK_BOT_TOKEN",
        lambda: f"xoxb-{rnd(DIG, 12)}-{rnd(DIG, 13)}-{rnd(ALNUM, 24)}",
    ),
    (
        "slack",
        "slack-token",
        "SLACK_USER_TOKEN",
        lambda: f"xoxp-{rnd(DIG, 12)}-{rnd(DIG, 12)}-{rnd(DIG, 13)}-{rnd(HEX, 32)}",
    ),
    (
        "slack",
        "slack-token",
        "SLACK_APP_TOKEN",
        lambda: f"xapp-1-A{rnd(UP + DIG, 10)}-{rnd(DIG, 13)}-{rnd(HEX, 64)}",
    ),
    (
        "slack",
        "slack-webhook",
        "SLACK_WEBHOOK_URL",
        lambda: (
            f"https://hooks.slack.com/services/T{rnd(UP + DIG, 8)}/B{rnd(UP + DIG, 10)}/{rnd(ALNUM, 24)}"  # noqa: E501
        ),
    ),
    ("stripe", "stripe-key", "STRIPE_SECRET_KEY", lambda: "sk_live_" + rnd(ALNUM, 24)),
    ("stripe", "stripe-key", "STRIPE_RESTRICTED_KEY", lambda: "rk_live_" + rnd(ALNUM, 99)),
    ("stripe", "stripe-key", "STRIPE_TEST_KEY", lambda: "sk_test_" + rnd(ALNUM, 24)),
    ("stripe", "stripe-key", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + rnd(ALNUM, 32)),
    (
        "openai",
        "openai-key",
        "OPENAI_API_KEY",
        lambda: "sk-" + rnd(ALNUM, 20) + "T3BlbkFJ" + rnd(ALNUM, 20),
    ),
    ("openai", "openai-key", "OPENAI_API_KEY", lambda: "sk-proj-" + rnd(B64URL, 156)),
    ("openai", "openai-key", "OPENAI_ADMIN_KEY", lambda: "sk-admin-" + rnd(B64URL, 80)),
    ("openai", "openai-key", "OPENAI_SVC_KEY", lambda: "sk-svcacct-" + rnd(B64URL, 120)),
    (
        "anthropic",
        "anthropic-key",
        "ANTHROPIC_API_KEY",
        lambda: "sk-ant-api03-" + rnd(B64URL, 93) + "AA",
    ),
    (
        "anthropic",
        "anthropic-key",
        "ANTHROPIC_ADMIN_KEY",
        lambda: "sk-ant-admin01-" + rnd(B64URL, 93) + "AA",
    ),
    ("google", "google-api-key", "GOOGLE_API_KEY", lambda: "AIza" + rnd(B64URL, 35)),
    ("google", "google-oauth-secret", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + rnd(B64URL, 28)),
    ("google", "google-oauth-token", "GOOGLE_ACCESS_TOKEN", lambda: "ya29." + rnd(B64URL, 120)),
    ("twilio", "twilio-key", "TWILIO_API_KEY", lambda: "SK" + rnd(HEX, 32)),
    (
        "sendgrid",
        "sendgrid-key",
        "SENDGRID_API_KEY",
        lambda: f"SG.{rnd(B64URL, 22)}.{rnd(B64URL, 43)}",
    ),
    ("npm", "npm-token", "NPM_TOKEN", lambda: "npm_" + rnd(ALNUM, 36)),
    ("pypi", "pypi-token", "PYPI_TOKEN", lambda: "pypi-AgEIcHlwaS5vcmc" + rnd(B64URL, 70)),
    ("digitalocean", "digitalocean-token", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + rnd(HEX, 64)),
    ("digitalocean", "digitalocean-token", "DO_OAUTH", lambda: "doo_v1_" + rnd(HEX, 64)),
    ("shopify", "shopify-token", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + rnd(HEX, 32)),
    ("shopify", "shopify-token", "SHOPIFY_SHARED_SECRET", lambda: "shpss_" + rnd(HEX, 32)),
    ("shopify", "shopify-token", "SHOPIFY_CUSTOM_APP", lambda: "shpca_" + rnd(HEX, 32)),
    ("mailgun", "mailgun-key", "MAILGUN_API_KEY", lambda: "key-" + rnd(HEX, 32)),
    (
        "mailchimp",
        "mailchimp-key",
        "MAILCHIMP_API_KEY",
        lambda: rnd(HEX, 32) + "-us" + str(R.randint(1, 21)),
    ),
    ("heroku", "heroku-key", "HEROKU_API_KEY", lambda: "HRKU-AA" + rnd(B64URL, 58)),
    ("discord", "discord-bot-token", "DISCORD_BOT_TOKEN", discord_bot),
    (
        "discord",
        "discord-webhook",
        "DISCORD_WEBHOOK",
        lambda: f"https://discord.com/api/webhooks/{rnd(DIG, 18)}/{rnd(B64URL, 68)}",
    ),
    (
        "telegram",
        "telegram-bot-token",
        "TELEGRAM_BOT_TOKEN",
        lambda: f"{R.randint(10**8, 10**10 - 1)}:AA{rnd(B64URL, 33)}",
    ),
    ("huggingface", "huggingface-token", "HF_TOKEN", lambda: "hf_" + rnd(UP + LO, 34)),
    ("databricks", "databricks-token", "DATABRICKS_TOKEN", lambda: "dapi" + rnd(HEX, 32)),
    (
        "atlassian",
        "atlassian-token",
        "JIRA_API_TOKEN",
        lambda: "ATATT3xFfGF0" + rnd(B64URL, 170) + "=" + rnd(UP + DIG, 8),
    ),
    ("square", "square-token", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + rnd(B64URL, 60)),
    ("square", "square-token", "SQUARE_OAUTH_SECRET", lambda: "sq0csp-" + rnd(B64URL, 43)),
    (
        "paypal",
        "braintree-token",
        "BRAINTREE_ACCESS_TOKEN",
        lambda: f"access_token$production${rnd(LO + DIG, 16)}${rnd(HEX, 32)}",
    ),
    ("linear", "linear-key", "LINEAR_API_KEY", lambda: "lin_api_" + rnd(ALNUM, 40)),
    ("notion", "notion-token", "NOTION_TOKEN", lambda: "ntn_" + rnd(DIG, 11) + rnd(ALNUM, 35)),
    ("notion", "notion-token", "NOTION_SECRET", lambda: "secret_" + rnd(ALNUM, 43)),
    ("postman", "postman-key", "POSTMAN_API_KEY", lambda: f"PMAK-{rnd(HEX, 24)}-{rnd(HEX, 34)}"),
    ("hashicorp", "vault-token", "VAULT_TOKEN", lambda: "hvs." + rnd(B64URL, 90)),
    ("pulumi", "pulumi-token", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + rnd(HEX, 40)),
    (
        "grafana",
        "grafana-token",
        "GRAFANA_TOKEN",
        lambda: "glsa_" + rnd(ALNUM, 32) + "_" + rnd(HEX, 8),
    ),
    ("newrelic", "newrelic-key", "NEW_RELIC_API_KEY", lambda: "NRAK-" + rnd(UP + DIG, 27)),
    ("supabase", "supabase-token", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + rnd(HEX, 40)),
    ("docker", "docker-token", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + rnd(B64URL, 27)),
    ("alibaba", "alibaba-key", "ALIBABA_ACCESS_KEY_ID", lambda: "LTAI" + rnd(ALNUM, 20)),
    ("groq", "groq-key", "GROQ_API_KEY", lambda: "gsk_" + rnd(ALNUM, 52)),
    ("replicate", "replicate-token", "REPLICATE_API_TOKEN", lambda: "r8_" + rnd(ALNUM, 37)),
    ("perplexity", "perplexity-key", "PPLX_API_KEY", lambda: "pplx-" + rnd(ALNUM, 48)),
    ("xai", "xai-key", "XAI_API_KEY", lambda: "xai-" + rnd(ALNUM, 80)),
    ("rubygems", "rubygems-key", "GEM_HOST_API_KEY", lambda: "rubygems_" + rnd(HEX, 48)),
    (
        "age",
        "age-key",
        "AGE_KEY",
        lambda: "AGE-SECRET-KEY-1" + rnd("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper(), 58),
    ),
    (
        "azure",
        "azure-ad-secret",
        "AZURE_CLIENT_SECRET",
        lambda: rnd(ALNUM, 3) + str(R.randint(0, 9)) + "Q~" + rnd(ALNUM + "_~.-", 34),
    ),
    ("facebook", "facebook-token", "FB_ACCESS_TOKEN", lambda: "EAA" + rnd(ALNUM, 120)),
    (
        "tailscale",
        "tailscale-key",
        "TS_AUTHKEY",
        lambda: f"tskey-auth-k{rnd(ALNUM, 11)}CNTRL-{rnd(ALNUM, 33)}",
    ),
    (
        "pinecone",
        "pinecone-key",
        "PINECONE_API_KEY",
        lambda: "pcsk_" + rnd(ALNUM, 5) + "_" + rnd(ALNUM, 60),
    ),
    ("sentry", "sentry-token", "SENTRY_AUTH_TOKEN", lambda: "sntrys_eyJ" + rnd(B64URL, 120)),
    ("figma", "figma-token", "FIGMA_TOKEN", lambda: f"figd_{rnd(B64URL, 40)}"),
    ("fly", "fly-token", "FLY_API_TOKEN", lambda: "fo1_" + rnd(B64URL, 43)),
    ("jwt", "jwt", "SESSION_JWT", jwt),
]

# Values without a distinctive shape: only the key in front of them tells.
CONTEXT: list[tuple[str, str, str]] = [
    # (provider, template with {v}, value alphabet spec)
    ("aws", "aws_secret_access_key = {v}", "b64:40"),
    ("aws", "AWS_SECRET_ACCESS_KEY={v}", "b64:40"),
    ("aws", 'export AWS_SECRET_ACCESS_KEY="{v}"', "b64:40"),
    ("aws", "  aws_secret_access_key: {v}", "b64:40"),
    (
        "azure",
        "DefaultEndpointsProtocol=https;AccountName=photos;AccountKey={v};EndpointSuffix=core.windows.net",
        "b64:86==",
    ),
    ("azure", "AZURE_STORAGE_KEY={v}", "b64:86=="),
    ("azure", "https://photos.blob.core.windows.net/raw?sv=2022-11-02&ss=b&sig={v}", "b64url:43"),
    ("twilio", "TWILIO_ACCOUNT_SID=AC{h32}\nTWILIO_AUTH_TOKEN={v}", "hex:32"),
    ("twilio", "twilio auth token: {v}", "hex:32"),
    ("heroku", "HEROKU_API_KEY={v}", "uuid"),
    ("okta", "OKTA_API_TOKEN=00{v}", "b64url:40"),
    ("cloudflare", "CLOUDFLARE_API_TOKEN={v}", "b64url:40"),
    ("mistral", "MISTRAL_API_KEY={v}", "alnum:32"),
    ("cohere", 'co_api_key: "{v}"', "alnum:40"),
    ("azure-openai", "AZURE_OPENAI_KEY={v}", "hex:32"),
    ("django", "SECRET_KEY = '{v}'", "django:50"),
    ("django", "export DJANGO_SECRET_KEY={v}", "django:50"),
    ("flask", 'app.secret_key = "{v}"', "hex:48"),
    ("generic", "ENCRYPTION_KEY={v}", "hex:64"),
    ("generic", "encryptionKey: {v}", "b64:44"),
    ("generic", '{{"client_id": "web-app", "client_secret": "{v}"}}', "b64url:40"),
    ("generic", "client_secret={v}", "alnum:32"),
    ("generic", "CLIENT_SECRET = {v}", "alnum:32"),
    ("generic", "x-api-key: {v}", "alnum:32"),
    ("generic", 'apiKey: "{v}"', "alnum:32"),
    ("generic", "Api-Key={v}", "hex:40"),
    ("generic", "webhook_secret: {v}", "b64url:32"),
    ("generic", "[credentials]\nsecret = {v}", "alnum:24"),
    ("generic", "auth_token={v}", "hex:40"),
    ("generic", "MY_SERVICE_TOKEN={v}", "alnum:48"),
    (
        "gcp",
        '{{\n  "type": "service_account",\n  "project_id": "demo-123",\n  "private_key_id": "{v}",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"\n}}',  # noqa: E501
        "hex:40",
    ),
    ("postgres", "DATABASE_URL=postgres://app:{v}@db.internal:5432/app", "alnum:16"),
    ("postgres", "postgresql://admin:{v}@10.0.0.5/prod", "alnum:20"),
    ("mysql", "mysql://root:{v}@localhost:3306/shop", "alnum:12"),
    ("redis", "REDIS_URL=redis://:{v}@cache.example.com:6379/0", "alnum:24"),
    ("redis", "rediss://default:{v}@eu1.upstash.io:6379", "alnum:32"),
    ("amqp", "amqp://guest:{v}@rabbit.local:5672/", "alnum:14"),
    ("mongodb", "mongodb+srv://svc:{v}@cluster0.ab1cd.mongodb.net/app", "alnum:16"),
    ("http", "https://deploy:{v}@git.example.com/repo.git", "alnum:20"),
    ("http", "curl -u admin:{v} https://api.example.com/v1", "alnum:14"),
    ("netrc", "machine api.example.com login bob password {v}", "pw"),
    ("netrc", "machine github.com\n  login octo\n  password {v}", "alnum:40"),
    ("http", "Authorization: Bearer {v}", "b64url:48"),
    ("http", "curl -H 'Authorization: bearer {v}' https://api.example.com", "alnum:40"),
    ("http", "Authorization: Basic {v}", "basic"),
    ("docker", "DOCKER_PASSWORD={v}", "pw"),
    ("mysql", "MYSQL_ROOT_PASSWORD={v}", "pw"),
    ("postgres", "export PGPASSWORD='{v}'", "pw"),
    ("postgres", "POSTGRES_PASSWORD: {v}", "pw"),
    ("generic", "db_password = {v}", "pw"),
    ("generic", "DB_PASS={v}", "pw"),
    ("generic", "pass={v}", "pw"),
    ("generic", "passwd: {v}", "pw"),
    ("generic", "pwd={v}", "pw"),
    ("generic", "Password = {v}", "pw"),
    ("generic", '"password": "{v}"', "pw"),
    ("generic", "smtp_password: '{v}'", "pw"),
    ("generic", "[database]\nuser = app\npassword = {v}", "pw"),
    ("generic", "spring.datasource.password={v}", "pw"),
    ("generic", "<password>{v}</password>", "pw"),
    ("generic", "passphrase: {v}", "pw"),
    ("generic", "KEYSTORE_PASS={v}", "pw"),
    ("generic", 'ADMIN_PWD = "{v}"', "pw"),
    ("generic", "mail.smtp.Password={v}", "pw"),
    ("generic", "Passwort={v}", "pw"),
    ("generic", "kennwort: {v}", "pw"),
    ("card", "{v}", "card:visa"),
    ("card", "card number {v}", "card:mc"),
    ("card", "Kreditkarte: {v}", "card:amex"),
    ("card", "pay with {v} exp 09/28", "card:visa-spaced"),
    ("card", "{v}", "card:discover-dashed"),
]

# People saying a password or PIN in a sentence (English and German).
SAYINGS: list[tuple[str, str]] = [
    ("password", "my password is {v}"),
    ("password", "My Password is {v}"),
    ("password", "the password is {v}"),
    ("password", "the wifi password is {v}"),
    ("password", "wifi password: {v}"),
    ("password", "WLAN-Passwort: {v}"),
    ("password", "my netflix password is {v}, don't tell anyone"),
    ("password", "password for the router is {v}"),
    ("password", "the password to my laptop is {v}"),
    ("password", "remember: login bob, password {v}"),
    ("password", "pw is {v}"),
    ("password", "pass: {v}"),
    ("password", "my passcode is {v}"),
    ("password", "passphrase is {v}"),
    ("password", "the new password will be {v}"),
    ("password", "I changed my password to {v}"),
    ("password", "mein Passwort ist {v}"),
    ("password", "Mein Passwort lautet {v}"),
    ("password", "das Passwort für das WLAN ist {v}"),
    ("password", "das Kennwort ist {v}"),
    ("password", "Kennwort lautet: {v}"),
    ("password", "Zugangsdaten: Benutzer bob, Passwort {v}"),
    ("password", "Passwort fürs Online-Banking: {v}"),
    ("pin", "PIN is {pin}"),
    ("pin", "my PIN is {pin}"),
    ("pin", "the pin for my card is {pin}"),
    ("pin", "bank card PIN: {pin}"),
    ("pin", "SIM pin {pin}"),
    ("pin", "die PIN lautet {pin}"),
    ("pin", "meine PIN ist {pin}"),
    ("pin", "PIN-Code: {pin}"),
    ("pin", "Geheimzahl ist {pin}"),
    ("pin", "die Geheimzahl meiner EC-Karte lautet {pin}"),
    ("pin", "the door code is {pin}"),
    ("pin", "Türcode: {pin}"),
]

ENV_PHRASINGS = [
    ("bare", "{v}"),
    ("sentence", "here is my {name} token: {v}"),
    ("dotenv", "{NAME}={v}"),
    ("export", 'export {NAME}="{v}"'),
    ("yaml", "  {lname}: {v}"),
    ("json", '{{"{lname}": "{v}"}}'),
    ("ini", "{lname} = {v}"),
    ("markdown", "use `{v}` for the deploy"),
    ("lower", "{lname}={v}"),
]


def value_of(spec: str) -> str:
    kind, _, arg = spec.partition(":")
    if kind == "b64":
        pad = arg.count("=")
        return rnd(B64, int(arg.rstrip("="))) + "=" * pad
    if kind == "b64url":
        return rnd(B64URL, int(arg))
    if kind == "hex":
        return rnd(HEX, int(arg))
    if kind == "alnum":
        return rnd(ALNUM, int(arg))
    if kind == "django":
        return rnd(LO + DIG + "!@#%^&*(-_=+)", int(arg))
    if kind == "uuid":
        h = rnd(HEX, 32)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    if kind == "basic":
        return base64.b64encode(f"bob:{password()}".encode()).decode()
    if kind == "pw":
        return password()
    if kind == "card":
        brand, _, style = arg.partition("-")
        number = {
            "visa": lambda: luhn_complete("4", 16),
            "mc": lambda: luhn_complete(str(R.randint(51, 55)), 16),
            "amex": lambda: luhn_complete(R.choice(["34", "37"]), 15),
            "discover": lambda: luhn_complete("6011", 16),
        }[brand]()
        if style:
            sep = " " if style == "spaced" else "-"
            return sep.join(number[i : i + 4] for i in range(0, len(number), 4))
        return number
    raise ValueError(spec)


WORDS = [
    "Tr0ub4dor",
    "hunter",
    "Sommer",
    "Blaubeere",
    "correct-horse",
    "Sonnenschein",
    "Katze",
    "dragon",
]


def password() -> str:
    style = R.randrange(4)
    if style == 0:
        return R.choice(WORDS) + str(R.randint(10, 9999)) + R.choice("!?#&$%")
    if style == 1:
        return rnd(ALNUM + "!#$%&*+-?@", R.randint(10, 20))
    if style == 2:
        return "-".join(
            R.choice(["pony", "staple", "Wolke", "river", "Tisch", "lamp"]) for _ in range(3)
        ) + str(R.randint(1, 99))
    return R.choice(WORDS) + R.choice(["_", ".", ""]) + str(R.randint(1970, 2025))


def secrets() -> list[dict[str, str]]:
    out = []
    for provider, kind, name, make in TOKENS:
        for phrasing, template in R.sample(ENV_PHRASINGS, 3):
            v = make()
            text = template.format(v=v, NAME=name, lname=name.lower(), name=provider)
            out.append(
                {"provider": provider, "kind": kind, "phrasing": phrasing, "text": text, "value": v}
            )
    for provider, template, spec in CONTEXT:
        v = value_of(spec)
        kind = "card-number" if spec.startswith("card") else "context"
        text = template.format(v=v, h32=rnd(HEX, 32))
        out.append(
            {"provider": provider, "kind": kind, "phrasing": "context", "text": text, "value": v}
        )
    for kind, template in SAYINGS:
        v = password()
        pin = str(R.randint(0, 10 ** R.choice([4, 4, 6]) - 1)).zfill(4)
        value = pin if kind == "pin" else v
        text = template.format(v=v, pin=pin)
        out.append(
            {
                "provider": "person",
                "kind": kind,
                "phrasing": "sentence",
                "text": text,
                "value": value,
            }
        )
    for label in (
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "DSA PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ):
        key = pem(label)
        out.append(
            {
                "provider": "pem",
                "kind": "private-key",
                "phrasing": "pem",
                "text": key,
                "value": key.splitlines()[1],
            }
        )
    return out


def uuid() -> str:
    return value_of("uuid")


HARMLESS: list[Callable[[], str]] = [
    lambda: f"request id {uuid()} failed at 10:42",
    lambda: f"order_id: {uuid()}",
    lambda: f"commit {rnd(HEX, 40)} fixed the login bug",
    lambda: f"git cherry-pick {rnd(HEX, 7)}",
    lambda: f"sha256sum: {rnd(HEX, 64)}  ubuntu-24.04.iso",
    lambda: f"checksum = {rnd(HEX, 32)}",
    lambda: f"md5 of the backup is {rnd(HEX, 32)}",
    lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rnd(B64, 43)} alice@laptop",
    lambda: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{rnd(B64, 300)} bob@work",
    lambda: f"public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rnd(B64, 43)}",
    lambda: (
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"
        + rnd(B64, 40)
        + "\n-----END PUBLIC KEY-----"
    ),
    lambda: (
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU"
        + rnd(B64, 40)
        + "\n-----END CERTIFICATE-----"
    ),
    lambda: f"Amazon order {R.randint(100, 999)}-{rnd(DIG, 7)}-{rnd(DIG, 7)} arrives Tuesday",
    lambda: f"DHL tracking {rnd(DIG, 10)}",
    lambda: f"UPS 1Z{rnd(UP + DIG, 16)}",
    lambda: f"USPS tracking 9400 1000 0000 {rnd(DIG, 4)} {rnd(DIG, 4)} {rnd(DIG, 2)}",
    lambda: f"call me at +49 170 {rnd(DIG, 7)}",
    lambda: f"office phone (415) 555-{rnd(DIG, 4)}",
    lambda: f"IBAN is on the invoice, invoice no. INV-{rnd(DIG, 8)}",
    lambda: f"ISBN 978-3-16-{rnd(DIG, 6)}-{R.randint(0, 9)}",
    lambda: f"ISBN-13: 978{rnd(DIG, 10)}",
    lambda: f"the build is v{R.randint(1, 9)}.{R.randint(0, 30)}.{R.randint(0, 99)}+{rnd(HEX, 8)}",
    lambda: f"docker image sha256:{rnd(HEX, 64)}",
    lambda: f"bitcoin tx {rnd(HEX, 64)}",
    lambda: f"container id {rnd(HEX, 12)} restarted",
    lambda: f"The meeting room code is on floor {R.randint(2, 9)}.",
    lambda: f"Flight LH{R.randint(100, 9999)} on 2026-0{R.randint(1, 9)}-1{R.randint(0, 9)}",
    lambda: f"max_tokens = {R.choice([256, 1024, 4096])}",
    lambda: "token_type: bearer",
    lambda: "sort_key = created_at",
    lambda: "KEY_FILE=/etc/ssl/private/server.key",
    lambda: "PASSWORD_FILE=/run/secrets/db_password",
    lambda: "password_min_length = 12",
    lambda: "primary_key: true",
    lambda: "password: ${DB_PASSWORD}",
    lambda: "DB_PASSWORD=<your password here>",
    lambda: 'api_key = os.environ["API_KEY"]',
    lambda: "I forgot my password again",
    lambda: "the key to success is patience",
    lambda: "remind me to rotate the API token on Friday",
    lambda: "my password is too weak, I should change it",
    lambda: "My password expired yesterday",
    lambda: "the password is stored in 1Password",
    lambda: "The PIN is required at the door",
    lambda: "I need a new PIN for my card",
    lambda: "Uses a password manager and rotates tokens monthly",
    lambda: "What is a good secret santa gift under 20 euros?",
    lambda: "The secret is to let the dough rest overnight.",
    lambda: "I use bearer tokens for the API at work",
    lambda: "token economy talk on Thursday",
    lambda: "Ich habe mein Passwort vergessen",
    lambda: "Mein Passwort ist abgelaufen",
    lambda: "der Schlüssel liegt unter der Fußmatte",
    lambda: "Der Schlüssel zum Erfolg ist Geduld",
    lambda: "Die PIN ist auf dem Brief von der Bank",
    lambda: "Passwort ändern nicht vergessen",
    lambda: "the secret ingredient is cardamom",
    lambda: "Keyboard layout is German (QWERTZ)",
    lambda: "API keys live in the vault, never in memory",
    lambda: "pin the tab with Ctrl+Shift+P",
    lambda: f"Pin {R.randint(2, 40)} on the Raspberry Pi is ground",
    lambda: "passport number renewal due in May",
    lambda: "he passed the exam with 98 points",
    lambda: "postgres://db.example.com:5432/app",
    lambda: f"see https://example.com/docs?page={R.randint(1, 9)}&lang=de",
    lambda: f"https://github.com/octocat/hello-world/commit/{rnd(HEX, 40)}",
    lambda: "email: alice@example.com",
    lambda: f"color #{rnd(HEX, 6)} for the header",
    lambda: f"lottery numbers {' '.join(str(R.randint(1, 49)) for _ in range(6))}",
    lambda: f"the version is {rnd(DIG, 4)}.{rnd(DIG, 2)}",
    lambda: "public key fingerprint SHA256:" + rnd(B64, 43),
    lambda: "Mein WLAN heißt FritzBox 7590",
    lambda: "skip the sk- prefix discussion for now",
    lambda: f"Kundennummer {rnd(DIG, 10)}",
    lambda: f"Sendungsnummer {rnd(DIG, 12)}",
]


def harmless() -> list[dict[str, str]]:
    return [
        {
            "provider": "none",
            "kind": "harmless",
            "phrasing": "ordinary",
            "text": make(),
            "value": "",
        }
        for make in HARMLESS
    ]


def write(name: str, rows: list[dict[str, str]]) -> None:
    with (HERE / name).open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write("secrets.jsonl", secrets())
    write("harmless.jsonl", harmless())
