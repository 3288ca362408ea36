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
    # What developers really type (2.3): CLI flags, service keys, *_pass assignments, prose.
    ("docker login", "docker login -u deploy -p Zx9kQ2mLw7 registry.example.com", "Zx9kQ2mLw7"),
    ("docker login long flag", "docker login --username ci --password Dk7pW2qz9LmX ghcr.io", "Dk7pW2qz9LmX"),
    ("mysql glued", "mysql -h db.internal -u root -pMyS3cretPw8 orders < dump.sql", "MyS3cretPw8"),
    ("mysqldump quoted", "mysqldump -u backup -p'Bk!up2024#x' --all-databases", "Bk!up2024#x"),
    ("psql url", "psql postgresql://report:R3portPw77@pg.internal:5432/analytics -c 'select 1'", "R3portPw77"),
    ("psql password flag", "pg_dump --password=PgDump5ecret --host db orders", "PgDump5ecret"),
    ("curl basic auth", "curl -u admin:Hunter2Prod https://jenkins.internal/api/json", "Hunter2Prod"),
    ("curl user flag", "curl --user svc-bot:Qw3rtyBot99 -X POST https://ci.example.com/build", "Qw3rtyBot99"),
    ("token flag", "gh auth login --hostname github.example.com --token ghs_unused --token Tk9xQ2vB7nM4", "Tk9xQ2vB7nM4"),
    ("api key flag", "./scripts/seed.py --api-key=AkSeed7731xQ --env staging", "AkSeed7731xQ"),
    ("sshpass", "sshpass -p 'Ssh!Pass2024' ssh deploy@10.0.3.7 uptime", "Ssh!Pass2024"),
    ("sendgrid", "SENDGRID_KEY=SG.Hq3vX9kLm2Pz7Rt4.Wy8Nb5Vc1Xz6Lk3Jh9Gf2Ds7Aq4Pw0Oe8Ui5Yt", "SG.Hq3vX9kLm2Pz7Rt4.Wy8Nb5Vc1Xz6Lk3Jh9Gf2Ds7Aq4Pw0Oe8Ui5Yt"),
    ("twilio api key", "client = Client('SK2b9f4c7d1e8a3b6c5d0e9f8a7b6c5d4e', auth)", "SK2b9f4c7d1e8a3b6c5d0e9f8a7b6c5d4e"),
    ("twilio auth token", "TWILIO_AUTH_TOKEN: 7f3a9c2e5b8d1f4a6c0e9b2d5f8a1c3e", "7f3a9c2e5b8d1f4a6c0e9b2d5f8a1c3e"),
    ("mailgun", "mg = Mailgun(api='key-3ax6xnjp29jd6fds4gc373sgvjxteol0')", "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"),
    ("npm token", "//registry.npmjs.org/:_authToken=npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5", "npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5"),
    ("pypi token", "password = pypi-AgEIcHlwaS5vcmcCJDk3ZjM5YjQ3LTZkOTEtNDkzZi1hNGQ2LWFjYjE0OGM2MDIxZQ",
     "pypi-AgEIcHlwaS5vcmcCJDk3ZjM5YjQ3LTZkOTEtNDkzZi1hNGQ2LWFjYjE0OGM2MDIxZQ"),
    ("twine flag", "twine upload -u __token__ -p pypi-AgENdGVzdC5weXBpLm9yZwIkNWU4ZjQ1YjItYzQ1ZC00ZDc0LWE3ZDMtMGYyYjA4 dist/*",
     "pypi-AgENdGVzdC5weXBpLm9yZwIkNWU4ZjQ1YjItYzQ1ZC00ZDc0LWE3ZDMtMGYyYjA4"),
    ("slack webhook", "SLACK_WEBHOOK=https://hooks.slack.com/services/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",
     "Rk2Lm9Xw4Vq7Zt1Yb3Nc8Pd5"),
    ("stripe restricted", "stripe.api_key = 'rk_live_51Hx9Kq2Lm7Pz3Rt8Wy4Nb6Vc'", "rk_live_51Hx9Kq2Lm7Pz3Rt8Wy4Nb6Vc"),
    ("stripe webhook secret", "endpoint_secret = whsec_Mx7Kq2Lp9Rz4Tw8Yv3Nb6Cd1Fg5Hj", "whsec_Mx7Kq2Lp9Rz4Tw8Yv3Nb6Cd1Fg5Hj"),
    ("smtp pass yaml", "smtp:\n  host: smtp.mailgun.org\n  smtp_pass: s3cr3tM41lPw", "s3cr3tM41lPw"),
    ("db pass toml", 'db_pass = "T0mlDbPass!"', "T0mlDbPass!"),
    ("ini password", "[database]\nuser = app\npassword = IniPa55word", "IniPa55word"),
    ("export pass", "export REDIS_PASS=R3disPr0dPass", "R3disPr0dPass"),
    ("python kwarg", "conn = psycopg.connect(host='db', user='app', password='Kw4rgPa55')", "Kw4rgPa55"),
    ("ado connection string", "Server=tcp:sql.example.com;Database=shop;User Id=app;Password=Ad0NetPw9;", "Ad0NetPw9"),
    ("mongodb url", "MONGO_URI=mongodb+srv://shop:M0ngoPw55@cluster0.abcde.mongodb.net/shop", "M0ngoPw55"),
    ("redis url", "redis-cli -u redis://:R3disUrlPw@cache.internal:6379/0 ping", "R3disUrlPw"),
    ("amqp url", "CELERY_BROKER=amqp://worker:AmqpPw771@rabbit:5672//", "AmqpPw771"),
    ("stated in prose", "by the way, the prod db password is CorrectHorse42", "CorrectHorse42"),
    ("stated api key", "my api key for the staging cluster is Ak7Lm2Qx9Vb4", "Ak7Lm2Qx9Vb4"),
    ("stated quoted", "the wifi password is 'purple elephant'", "purple elephant"),
    ("hf token", "HF=hf_Qm7Lx2Vb9Kc4Np8Rz3Tw6Yd1Fg5Hj0Sa2Ue", "hf_Qm7Lx2Vb9Kc4Np8Rz3Tw6Yd1Fg5Hj0Sa2Ue"),
    ("discord webhook", "https://discord.com/api/webhooks/112233445566778899/Xk9Lm2Qw7Vb4Nc8Pz3Rt6Yd1", "Xk9Lm2Qw7Vb4Nc8Pz3Rt6Yd1"),
]

# Text that looks like a secret but is not: it must be stored verbatim (and stay searchable).
LOOKALIKES = [
    "fixed in commit 3f026a6e5a430620e33ca099322a2831f7955d8d",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "the password reset flow sends a magic link",
    "the token bucket algorithm refills 10 tokens per second",
    "vault login --method=userpass --password-file /run/secrets/vault",
    "echo \"$REGISTRY_TOKEN\" | docker login -u ci --password-stdin ghcr.io",
    "def get_token(self): return self._cache.get('token')",
    "the password is stored in vault under kv/app",
    "primary_key: id",
    "cache_key = user_profile_cache_v2",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "mysql -u root -p orders # prompts for the password",
    "curl -u \"$USER:$PASS\" https://api.example.com",
    "The token is valid for one hour.",
]

# Contents of a .env file a tool reads: every value is a secret, whatever it looks like.
DOTENV = "STRIPE_WEBHOOK_HINT=whsec_unremarkable_value_42\nFEATURE_SALT=plain-looking-salt-8841\n"
DOTENV_VALUES = ["whsec_unremarkable_value_42", "plain-looking-salt-8841"]

PRIVATE_TEXT = "my home alarm code is 55-13-97"
