"""Planted secrets: realistic shapes (fake values) of every kind recall must redact.

Each entry is (kind, the text as it would appear, the secret value that must never reach disk).
"""

PEM_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u\n"
    "+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQz\n"
    "-----END RSA PRIVATE KEY-----"
)

SECRETS = [
    ("aws access key", "aws_access_key_id = AKIAQ3EGRXL7ZPWD4N5T", "AKIAQ3EGRXL7ZPWD4N5T"),
    ("aws secret key", "aws_secret_access_key = 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",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ7xkPL2mV"),
    ("github token", "export GH_TOKEN_VALUE=ghp_R8x2mQ7vLk3Zt9Wc4Yb6Nd1Fh5Jp0Ss2Ue8Ga",
     "ghp_R8x2mQ7vLk3Zt9Wc4Yb6Nd1Fh5Jp0Ss2Ue8Ga"),
    ("github fine-grained", "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdEFGHijklMNOPqr",
     "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdEFGHijklMNOPqr"),
    ("gitlab token", "git clone https://oauth2:glpat-Xy9zK2mN4pQ7rS1tV3wZ@gitlab.example.com/team/app.git",
     "glpat-Xy9zK2mN4pQ7rS1tV3wZ"),
    ("slack token", "SLACK_BOT=xoxb-4820394021-5820391029384-QwErTyUiOpAsDfGhJkLzXcVb",
     "xoxb-4820394021-5820391029384-QwErTyUiOpAsDfGhJkLzXcVb"),
    ("openai key", "OPENAI_API_KEY=sk-proj-4fGh7Jk9Lm2Np5Qr8St1Vw3Xy6Za0Bc4De7Fg", "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Vw3Xy6Za0Bc4De7Fg"),
    ("anthropic key", "client = Anthropic(api_key='sk-ant-api03-Zq8Xw2Ve5Rt7Yu1Io3Pa6Sd9Fg0Hj4Kl-AAAA')",
     "sk-ant-api03-Zq8Xw2Ve5Rt7Yu1Io3Pa6Sd9Fg0Hj4Kl-AAAA"),
    ("jwt", "cookie: session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI5ODc2NTQzMjEwIn0.Tq7LmW2xZ9vB4nK8sD1fG6hJ3pR5tY0uI",
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI5ODc2NTQzMjEwIn0.Tq7LmW2xZ9vB4nK8sD1fG6hJ3pR5tY0uI"),
    ("pem private key", PEM_KEY, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"),
    ("password assignment", "DATABASE_PASSWORD=Tr0ub4dor-and-3-horses", "Tr0ub4dor-and-3-horses"),
    ("secret assignment", 'config = {"client_secret": "q9W8e7R6t5Y4u3I2o1P0"}', "q9W8e7R6t5Y4u3I2o1P0"),
    ("token assignment", "curl 'https://api.example.com/v1?token=7c4a8d09ca3762af61e59520943dc264'",
     "7c4a8d09ca3762af61e59520943dc264"),
    ("authorization header", 'curl -H "Authorization: Bearer mF_9.B5f-4.1JqM_Zz0Kp7" https://api.example.com',
     "mF_9.B5f-4.1JqM_Zz0Kp7"),
    ("basic auth header", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("password in url", "DATABASE_URL=postgres://app:Sup3rS3cretPw@db.internal:5432/app", "Sup3rS3cretPw"),
]

# Contents of a .env file a tool reads: every value is a secret, whatever it looks like.
DOTENV = "STRIPE_WEBHOOK_HINT=whsec_unremarkable_value_42\nFEATURE_SALT=plain-looking-salt-8841\n"
DOTENV_VALUES = ["whsec_unremarkable_value_42", "plain-looking-salt-8841"]

PRIVATE_TEXT = "my home alarm code is 55-13-97"
