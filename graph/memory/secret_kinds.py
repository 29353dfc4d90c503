"""The kinds of secret the filter names (what `maistro chat` says was not saved), and a found secret's place."""

REDACTED = "[redacted]"
PASSWORD, PIN, API_KEY = "password", "PIN", "API key"
CARD_NUMBER, CARD_CODE, PRIVATE_KEY = "card number", "card security code", "private key"
BANK_ACCOUNT, NATIONAL_ID = "IBAN", "social security number"

Span = tuple[int, int, str]  # start, end, kind
