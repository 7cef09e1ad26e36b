from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwell.sources.redact import redact

LONG = "abcdefghijklmnopqrstuvwxyz"  # 26 chars: masked as abcdef…wxyz
LONG_MASK = "abcdef…wxyz"


def test_short_tokens_become_stars_and_long_ones_keep_ends() -> None:
    assert redact("API_KEY=" + "a" * 17) == "API_KEY=***"
    assert redact("API_KEY=" + "abcdefghijklmnopqr") == "API_KEY=abcdef…opqr"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"OPENAI_API_KEY={LONG}", f"OPENAI_API_KEY={LONG_MASK}"),
        ("password: hunter2", "password: ***"),
        ('DB_PASSWORD="s3cr3t" next', 'DB_PASSWORD="***" next'),
        ("export github_token='tok' && run", "export github_token='***' && run"),
        ("MY_SECRET = value123", "MY_SECRET = ***"),
        ("passwd=pw", "passwd=***"),
    ],
)
def test_env_style_assignments(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_env_style_needs_assignment_and_word_boundary() -> None:
    plain = "The key to success; tokens are counted; KEYBOARD=qwerty"
    assert redact(plain) == plain


@pytest.mark.parametrize("field", ["apiKey", "token", "secret", "password", "accessToken"])
def test_json_fields(field: str) -> None:
    assert redact(f'{{"{field}": "{LONG}", "user": "bob"}}') == (
        f'{{"{field}": "{LONG_MASK}", "user": "bob"}}'
    )


def test_json_refresh_token_with_spaces_in_value() -> None:
    assert redact('{"refreshToken":"a b"}') == '{"refreshToken":"***"}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"cli --api-key {LONG} --verbose", f"cli --api-key {LONG_MASK} --verbose"),
        ("cli --token 'abc'", "cli --token '***'"),
        ("cli --secret s", "cli --secret ***"),
        ('cli --password "pw"', 'cli --password "***"'),
    ],
)
def test_cli_flags(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_authorization_header_masks_any_length() -> None:
    assert redact("Authorization: Bearer abc.def") == "Authorization: Bearer ***"
    assert redact(f"authorization=bearer {LONG}") == f"authorization=bearer {LONG_MASK}"


def test_bare_bearer_needs_eighteen_characters() -> None:
    assert redact(f"use Bearer {LONG} now") == f"use Bearer {LONG_MASK} now"
    assert redact("a Bearer shorttoken") == "a Bearer shorttoken"


def test_pem_block_keeps_only_its_markers() -> None:
    pem = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretbody\n"
        "moresecret==\n-----END RSA PRIVATE KEY-----\nafter"
    )
    assert redact(pem) == (
        "before\n-----BEGIN RSA PRIVATE KEY-----\n…redacted…\n-----END RSA PRIVATE KEY-----\nafter"
    )


def test_single_line_pem_stays_on_one_line() -> None:
    pem = "k: -----BEGIN PRIVATE KEY----- MIIsecret -----END PRIVATE KEY----- done"
    redacted = redact(pem)
    assert redacted == "k: -----BEGIN PRIVATE KEY----- …redacted… -----END PRIVATE KEY----- done"


def test_pem_content_on_the_begin_line_is_not_kept() -> None:
    redacted = redact("-----BEGIN PRIVATE KEY-----MIIsecret\nx\n-----END PRIVATE KEY-----")
    assert "MIIsecret" not in redacted


@pytest.mark.parametrize(
    "token",
    [
        "sk-proj-AbCdEf1234567890XYZabc",
        "sk-abcd1234",
        "ghp_" + "A1" * 10,
        "github_pat_" + "a_" * 10,
        "xoxb-1234567890-abcdef",
        "xoxp-1234567890",
        "xapp-1-A0123456789",
        "gsk_abcdefghij",
        "AIza" + "Sy" * 10,
        "pplx-abcdefghij",
        "npm_abcdefghij12",
        "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
    ],
)
def test_prefixed_tokens(token: str) -> None:
    redacted = redact(f"token is {token}.")
    assert token not in redacted
    assert redacted.startswith("token is ")
    assert redacted.endswith(".")


def test_prefix_patterns_are_case_insensitive_and_need_a_word_start() -> None:
    assert "SK-ABCDEFGHIJKL" not in redact("SK-ABCDEFGHIJKL")
    assert redact("task-abcdefghijkl") == "task-abcdefghijkl"


def test_mask_is_applied_to_the_value_not_to_an_equal_earlier_substring() -> None:
    assert redact("KEY=KEY") == "KEY=***"


def test_plain_text_is_unchanged() -> None:
    text = "Met Alice at 10:30, discussed the roadmap and the Q3 budget (≈ 12k€)."
    assert redact(text) == text


FRAGMENTS = st.sampled_from(
    [
        "KEY", "api_key", "password", "=", ":", " ", "\n", '"', "'", "\\", "…", "***", "*",
        "sk-", "ghp_", "xoxb-", "AIza", "npm_", "123456:", "Bearer ", "Authorization: ",
        "gho_", "sk_live_", "AKIA", "ASIAY34FZKBOKMUTVV7A", "aws secret ", "://u:", "@h",
        "Password=", ";", "&", "my password is ", "pwd=",
        "--token ", '"apiKey": "', "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----", "abcdefghij", "ABCDEFGHIJKLMNOPQRSTUV", "0123456789",
        "_", "-", ".", "é",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAGMENTS, max_size=30).map("".join))
def test_redaction_is_idempotent_on_secret_like_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_redaction_is_idempotent_on_arbitrary_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.sampled_from(["sk-", "ghp_", "gsk_", "pplx-", "npm_"]),
    body=st.text(alphabet="ABCDEFabcdef0123456789", min_size=20, max_size=40),
    before=st.text(alphabet=" \n.,;:!?()", max_size=20),
    after=st.text(alphabet=" \n.,;:!?()", max_size=20),
)
def test_prefixed_secret_never_survives(prefix: str, body: str, before: str, after: str) -> None:
    token = prefix + body
    assert token not in redact(before + token + after)


# -- families added for issue 14.5 ------------------------------------------------------------

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key id AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
        ("temporary ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
        (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET),
        (f'{{"aws_secret_access_key":"{AWS_SECRET}"}}', AWS_SECRET),
        (f"the aws secret key is {AWS_SECRET} ok", AWS_SECRET),
        ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
        ("ghu_" + "Ab1" * 12, "ghu_" + "Ab1" * 12),
        ("ghs_" + "Zz9" * 12, "ghs_" + "Zz9" * 12),
        ("ghr_" + "q7" * 18, "ghr_" + "q7" * 18),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "11ABCDEFG0123456789"),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
        ("rk_live_51Habcdefghij1234", "51Habcdefghij1234"),
        ("sk_test_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
        ("my password is hunter2.", "hunter2"),
        ("the password is swordfish", "swordfish"),
        ("my password for gmail is 'correct horse battery'", "correct horse battery"),
        ("passphrase was: Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("export DB_PASSWORD='two words'", "two words"),
    ],
)
def test_new_families_are_masked(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert redact(redacted) == redacted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "postgres://admin:hunter2@db.example.com:5432/app",
            "postgres://admin:***@db.example.com:5432/app",
        ),
        ("redis://:p%40ss@cache:6379/0", "redis://:***@cache:6379/0"),
        (
            "Server=tcp:db,1433;Database=app;User Id=sa;Password=my pass word;Encrypt=true",
            "Server=tcp:db,1433;Database=app;User Id=sa;Password=***;Encrypt=true",
        ),
        (
            "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=Secr3t;",
            "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=***;",
        ),
        (
            "jdbc:postgresql://db/app?user=bob&password=Secr3t&ssl=true",
            "jdbc:postgresql://db/app?user=bob&password=***&ssl=true",
        ),
        ("Driver={ODBC};Server=x;Uid=bob;Pwd=Secr3t;", "Driver={ODBC};Server=x;Uid=bob;Pwd=***;"),
        ("my password is hunter2.", "my password is ***."),
    ],
)
def test_passwords_become_stars_and_the_rest_is_kept(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The password is incorrect.",
        "Your password is required and the password was changed yesterday.",
        "The password is too short; a password is a secret you keep.",
        "See http://localhost:8080/path@foo and mail bob@example.com.",
        "Asia pacific regional office, ASIAPACIFICREGIONALOFFICE, AKIA is a prefix.",
        "The task-skipping logic and ghost_town rk_ sk_ prefixes stay.",
        "Call https://example.com/a:b@c? No: the host is example.com.",
        "We discussed AWS pricing and the secret of good soup.",
    ],
)
def test_prose_about_credentials_is_unchanged(text: str) -> None:
    assert redact(text) == text


PROSE = (
    "the my our password is was for key token secret aws access github stripe live test "
    "user host server database note meeting budget roadmap Alice Bob 10:30 2026 http "
    "example.com a an of to and in on required incorrect changed , . ; ( ) -"
)
PROSE_WORDS = st.sampled_from(PROSE.split())


#: "password is X" / "password for Y was X" is the one assignment prose has (redacted by design).
PROSE_PASSWORD = re.compile(r"\bpassword\s+(?:for\s+\S+\s+)?(?:is|was)\b", re.IGNORECASE)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(PROSE_WORDS, max_size=25)
    .map(" ".join)
    .filter(lambda text: not PROSE_PASSWORD.search(text))
)
def test_prose_without_assignments_is_never_changed(text: str) -> None:
    # No "=", ":", quotes, "://", token-shaped words or "password is ...": nothing here is a
    # credential.
    assert redact(text) == text


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.sampled_from(
        ["gho_", "ghu_", "ghs_", "ghr_", "sk_live_", "rk_live_", "sk_test_", "rk_test_"]
    ),
    body=st.text(alphabet="ABCDEFabcdef0123456789", min_size=24, max_size=40),
    before=st.text(alphabet=" \n.,;:!?()", max_size=20),
    after=st.text(alphabet=" \n.,;:!?()", max_size=20),
)
def test_new_prefixed_secrets_never_survive(
    prefix: str, body: str, before: str, after: str
) -> None:
    token = prefix + body
    assert token not in redact(before + token + after)


@settings(max_examples=200, deadline=None)
@given(
    scheme=st.sampled_from(["postgres", "mysql", "mongodb+srv", "https", "amqp"]),
    user=st.text(alphabet="abcdefxyz_.", min_size=0, max_size=8),
    password=st.text(alphabet="ABCxyz0123456789!$*-_.~", min_size=4, max_size=30),
)
def test_url_passwords_never_survive(scheme: str, user: str, password: str) -> None:
    text = f"connect to {scheme}://{user}:{password}@db.internal:5432/app now"
    redacted = redact(text)
    assert f":{password}@" not in redacted
    assert redacted.endswith("@db.internal:5432/app now")
    assert redact(redacted) == redacted
