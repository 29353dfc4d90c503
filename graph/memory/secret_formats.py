"""Secrets with a shape of their own, found wherever they stand.

- Keys and tokens of known formats: detect-secrets' patterns (AWS `AKIA…`, GitHub `ghp_…`, GitLab `glpat-…`,
  Slack `xox…-`, Stripe `sk_live_…`, OpenAI, JWTs it can decode, SendGrid, Discord and Telegram bot tokens,
  Mailchimp, Twilio, Square, PyPI, Azure storage keys), and the shapes it lacks: OpenAI-style `sk-…` of any
  provider, Stripe test and webhook keys, `github_pat_…`, Google `AIza…`, Hugging Face `hf_…`, npm `npm_…`,
  JWTs it cannot decode. A key found is redacted to the end of its token.
- A standalone 40-character AWS-style secret key (upper and lower case and a digit, so a git hash is not one).
- Private key blocks; the password of a URL (`scheme://user:PASSWORD@host`), the token of a Slack or Discord
  webhook URL, and secret query parameters (`?access_token=…`, `&password=…`).
"""

import functools
import re
from collections.abc import Iterable, Iterator

from graph.memory.secret_kinds import API_KEY, PASSWORD, PRIVATE_KEY, Span

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S
)
# Shapes detect-secrets has no pattern for (or only a narrower one).
_KEY_FORMATS = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9+/=]{20,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
    r"|AIza[A-Za-z0-9_-]{35}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}"
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r")"
)
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
# Every key detect-secrets' patterns find is a run of 20 such characters, or a Slack token ("xoxb-…").
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-.:/+=]{20}|xox", re.I)
_AWS_SECRET = re.compile(r"(?<![^\s\"'`=:(\[<])[A-Za-z0-9/+]{40}(?![^\s\"'`,;.)\]>])")
_URL_PASSWORD = re.compile(r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@?#]*:([^\s/?#]+)@[^\s@/?#:]+")
_WEBHOOK = re.compile(
    r"(?i)https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks)/([A-Za-z0-9_/-]+)"
)
_QUERY_SECRET = re.compile(
    r"(?i)[?&;](?:(?P<password>password|passwd|pwd|pass)|access_token|refresh_token|id_token|token|auth"
    r"|api_key|apikey|api-key|key|secret|client_secret|sig|signature|x-amz-signature)=([^&\s#]{4,})"
)


@functools.cache
def _library_keys_pattern() -> re.Pattern:
    """detect-secrets' key patterns that match a key by its own shape, as one pattern tried only where a token
    starts (so a long run of token characters is read once, not once per character: `eyJeyJeyJ…`); JWTs match
    as the group `jwt`, to be checked the way its plugin checks them. Its patterns that need a variable name
    around the key (the keyword, IBM, Cloudant, SoftLayer and AWS secret ones), or match ordinary text (public
    IPs, Artifactory), are not used."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    plugins = (
        AzureStorageKeyDetector, DiscordBotTokenDetector, GitHubTokenDetector, GitLabTokenDetector, MailchimpDetector,
        OpenAIDetector, PypiTokenDetector, SendGridDetector, SquareOAuthDetector, StripeDetector,
        TelegramBotTokenDetector, TwilioKeyDetector,
    )
    patterns = [AWSKeyDetector.denylist[0], SlackDetector.denylist[0], *(p for plugin in plugins for p in plugin.denylist)]
    keys = "|".join(f"(?{'i' if p.flags & re.IGNORECASE else ''}:{p.pattern})" for p in patterns)
    jwts = "|".join(f"(?:{p.pattern})" for p in JwtTokenDetector.denylist)
    return re.compile(rf"(?<![A-Za-z0-9_-])(?:(?P<jwt>{jwts})|{keys})")


def _library_keys(text: str) -> Iterator[Span]:
    """The keys detect-secrets' patterns find, each widened to the whole token it starts (a pattern may match only
    a key's first characters)."""
    from detect_secrets.plugins.jwt import JwtTokenDetector

    if not _LONG_TOKEN.search(text):
        return
    for match in _library_keys_pattern().finditer(text):
        if match.group("jwt") is None or JwtTokenDetector.is_formally_valid(match.group()):
            token = _TOKEN.match(text, match.start())
            yield match.start(), max(match.end(), token.end() if token else 0), API_KEY


def format_rules(text: str) -> Iterator[Iterable[Span]]:
    """Candidate secrets of known formats, rule by rule, in order of precedence."""
    if "-----BEGIN" in text:
        yield ((match.start(), match.end(), PRIVATE_KEY) for match in _PRIVATE_KEY.finditer(text))
    if "://" in text:
        yield ((match.start(1), match.end(1), PASSWORD) for match in _URL_PASSWORD.finditer(text))
        yield ((match.start(1), match.end(1), API_KEY) for match in _WEBHOOK.finditer(text))
    if "=" in text:
        yield (
            (match.start(2), match.end(2), PASSWORD if match.group("password") else API_KEY)
            for match in _QUERY_SECRET.finditer(text)
        )
    yield ((match.start(), match.end(), API_KEY) for match in _KEY_FORMATS.finditer(text))
    yield _library_keys(text)
    yield (
        (match.start(), match.end(), API_KEY)
        for match in _AWS_SECRET.finditer(text)
        if _upper_lower_and_digit(match.group())
    )


def _upper_lower_and_digit(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)
