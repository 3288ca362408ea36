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
    # 3.3: password options of less common CLIs (JVM key tools, TLS tools, key-value stores, archives, directories)
    ("keytool storepass", "keytool -importkeystore -srckeystore old.p12 -srcstorepass Ks7oreOld -destkeystore app.jks",
     "Ks7oreOld"),
    ("keytool keypass", "keytool -genkeypair -alias app -keystore app.jks -storepass St0rePw22 -keypass K3yPw9x",
     "K3yPw9x"),
    ("jarsigner", "jarsigner -keystore release.jks -storepass Rel3aseJar app.apk release", "Rel3aseJar"),
    ("apksigner", "apksigner sign --ks release.jks --ks-pass pass:Apk5ignPw --ks-key-alias rel app.apk", "Apk5ignPw"),
    ("openssl passin", "openssl rsa -in server.key -passin pass:S3rverK3y -out plain.key", "S3rverK3y"),
    ("openssl pkcs12", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:Bund1eP12",
     "Bund1eP12"),
    ("openssl enc", "openssl enc -aes-256-cbc -salt -in db.sql -out db.sql.enc -k EncKey2024x", "EncKey2024x"),
    ("redis-cli auth", "redis-cli -h cache.internal -p 6379 -a R3disCl1Pw --no-auth-warning info", "R3disCl1Pw"),
    ("mongosh password", "mongosh \"mongodb://db.internal:27017\" -u admin -p M0ngoSh3ll --authenticationDatabase admin",
     "M0ngoSh3ll"),
    ("ldapsearch bind", "ldapsearch -x -H ldap://ldap.internal -D cn=admin,dc=corp -w Ld4pB1nd -b dc=corp", "Ld4pB1nd"),
    ("sqlcmd", "sqlcmd -S sql.internal -U sa -P SqlSa2024x -Q \"select 1\"", "SqlSa2024x"),
    ("7z archive", "7z a -pArch1vePw -mhe=on backup.7z ./secrets", "Arch1vePw"),
    ("gpg passphrase", "gpg --batch --passphrase GpgPhr4se9 -c backup.tar", "GpgPhr4se9"),
    ("htpasswd", "htpasswd -b -c /etc/nginx/.htpasswd admin Htp4sswdX", "Htp4sswdX"),
    ("rabbitmqctl", "rabbitmqctl add_user worker Rabb1tPw77 && rabbitmqctl set_user_tags worker", "Rabb1tPw77"),
    ("smbclient", "smbclient //fs.internal/share -U backup%Smb4ccess9", "Smb4ccess9"),
    # cloud CLIs that take a secret as a positional argument (or as KEY=VALUE)
    ("aws configure set", "aws configure set aws_secret_access_key Qm4n7Vx2Lp9Kw3Rt8Yb5Nc1Zx6Hj0Df4Gs7Ae2W",
     "Qm4n7Vx2Lp9Kw3Rt8Yb5Nc1Zx6Hj0Df4Gs7Ae2W"),
    ("heroku config:set", "heroku config:set STRIPE_SECRET=Str1peSecr3t REGION=eu -a shop-prod", "Str1peSecr3t"),
    ("fly secrets set", "fly secrets set DATABASE_PASSWORD=Fly5ecretDb API_MODE=live", "Fly5ecretDb"),
    ("gh secret set", "gh secret set NPM_PUBLISH --body Gh5ecretB0dy --repo acme/web", "Gh5ecretB0dy"),
    ("vault login", "vault login hvs.CAESIJ8k2mNp4qR7sT1vW3xY5zA9bC2dE4fG", "hvs.CAESIJ8k2mNp4qR7sT1vW3xY5zA9bC2dE4fG"),
    ("doctl auth", "doctl auth init -t Dop7Acc3ssTok3nX", "Dop7Acc3ssTok3nX"),
    ("kubectl literal", "kubectl create secret generic db --from-literal=username=app --from-literal=password=K8sL1teral",
     "K8sL1teral"),
    ("az login", "az login --service-principal -u 0f3a-app -p Az5pS3cretVal --tenant contoso.onmicrosoft.com",
     "Az5pS3cretVal"),
    ("netlify env", "netlify env:set MAILER_KEY Nl3tifyK3y9 --context production", "Nl3tifyK3y9"),
    ("doppler secrets", "doppler secrets set SIGNING_KEY Dopp1erS1gn --project api", "Dopp1erS1gn"),
    ("aws secret string", "aws secretsmanager create-secret --name prod/db --secret-string Sm5ecretStr",
     "Sm5ecretStr"),
    # credentials inside every JDBC URL form
    ("jdbc oracle thin", "url=jdbc:oracle:thin:scott/Or4cleT1ger@//db.internal:1521/ORCL", "Or4cleT1ger"),
    ("jdbc params", "jdbc:postgresql://db.internal:5432/shop?user=app&password=JdbcPgPw7&ssl=true", "JdbcPgPw7"),
    ("jdbc sqlserver", "jdbc:sqlserver://sql.internal:1433;databaseName=shop;user=app;password=MsJdbc9x;encrypt=true",
     "MsJdbc9x"),
    ("jdbc mysql userinfo", "spring.datasource.url=jdbc:mysql://app:MyJdbcPw5@db.internal:3306/shop", "MyJdbcPw5"),
    ("sqlplus", "sqlplus system/Sq1PlusPw@//db.internal:1521/ORCL @migrate.sql", "Sq1PlusPw"),
    # credentials stated in prose, in other phrasings than "password is"
    ("prose set to", "I changed the staging db password to Blue-Falcon-81 this morning", "Blue-Falcon-81"),
    ("prose as the password", "use Winter2024!x as the password for the admin panel", "Winter2024!x"),
    ("prose with password", "log in to grafana as admin with password Graf4naAdm", "Graf4naAdm"),
    ("prose creds", "creds for the test box are deploy / Dep1oyBox77", "Dep1oyBox77"),
    ("prose username password", "username: ops, password Ops2024secret (rotate after the demo)", "Ops2024secret"),
    ("prose pw", "the vpn pw's Vpn7Tunnel, same as last quarter", "Vpn7Tunnel"),
    ("prose user pass", "for the staging rabbit use user mqadmin, pass Rabb1tQ-Stage", "Rabb1tQ-Stage"),
    ("prose login password", "the grafana box: login viewer password Gr4f-View3r, read only", "Gr4f-View3r"),
    # 5.1: secrets under the names people give them (abbreviated, camelCase, with a suffix) and said in passing
    ("tfvars pw", 'db_admin_pw = "Adm1nDbPw77"', "Adm1nDbPw77"),
    ("tfvars psk", 'vpn_psk = "Psk-Tunnel-9931"', "Psk-Tunnel-9931"),
    ("compose root pw", "      MYSQL_ROOT_PW: R00tMyPw88", "R00tMyPw88"),
    ("camelCase pw", '{"smtpHost": "mail.internal", "smtpPw": "SmtpCamel55"}', "SmtpCamel55"),
    ("licence key", "license_key: LK-7741-ACME-PRO", "LK-7741-ACME-PRO"),
    ("suffixed name", "PASSWORD_PROD=PwProdSfx9", "PwProdSfx9"),
    ("prose pw is now", "the admin pw for grafana is now Gr4fNow9, tell nobody", "Gr4fNow9"),
    ("export in a command", "export GRAFANA_ADMIN_PW=Gr4fExp0rt && make grafana", "Gr4fExp0rt"),
    # every word a secret's name may end in is one in prose too
    ("prose salt", "the salt for jwt signing is now Xk9pQ2zz", "Xk9pQ2zz"),
    ("prose cookie", "the session cookie for the admin is s3ssionAbc9", "s3ssionAbc9"),
    ("prose credentials are", "our deploy credentials are Zx81kqP0", "Zx81kqP0"),
    ("prose otp seed", "the otp seed is JBSWY3DPEHPK3PXP", "JBSWY3DPEHPK3PXP"),
    ("prose pass phrase", "the pass phrase is Tr0ub4dor3", "Tr0ub4dor3"),
    # a value holds ,;)] too, a JVM property is a setting, a name may start with the secret's word
    ("semicolon in a value", "DB_PASSWORD=Xy7;kP2]q", "kP2]q"),
    ("comma in a value", "db_password: p4ss,w0rd!x", ",w0rd!x"),
    ("jvm property", "java -Dspring.datasource.password=S3cretPassJvm -jar app.jar", "S3cretPassJvm"),
    ("leading secret word", "      PASSWORD_ADMIN: Hunter22xAdm", "Hunter22xAdm"),
    ("secret key base", "SECRET_KEY_BASE=9f8e7d6c5b4a39281", "9f8e7d6c5b4a39281"),
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
    "keytool -list -v -keystore app.jks -storepass:env KEYSTORE_PASSWORD",
    "openssl req -new -key server.key -passin file:/run/secrets/keypass -out server.csr",
    "redis-cli -h cache.internal -a \"$REDIS_PASSWORD\" ping",
    "gh secret set NPM_TOKEN < token.txt",
    "we should set the password policy to 12 characters minimum",
    "use the staging profile as the default for the password reset tests",
    "jdbc:postgresql://db.internal:5432/shop?ssl=true&sslmode=verify-full",
    "heroku config:set WEB_CONCURRENCY=3 -a shop-prod",
    "the login form passes the user name and the pass phrase length check",
    "user signups pass 12000 per day since the campaign",
]

# Files that hold secrets by what they are: every value in them is one, whatever its name or shape (path, content,
# the values that must never reach disk).
SECRET_FILES = [
    ("infra/prod.tfvars", 'region = "eu-west-1"\nreplica_seed = "Tfv4rsSeed"\n', ["Tfv4rsSeed"]),
    ("k8s/db-creds.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\ndata:\n"
     "  username: ZGJhZG1pbkFjbWU=\n  dsn: cG9zdGdyZXM6Ly9kYi5pbnRlcm5hbA==\n",
     ["ZGJhZG1pbkFjbWU=", "cG9zdGdyZXM6Ly9kYi5pbnRlcm5hbA=="]),
    ("config/credentials.json", '{"client_id": "acme-ci", "refresh": "CredsJs0nRefresh"}\n', ["CredsJs0nRefresh"]),
]
SECRET_FILE_VALUES = [value for _, _, values in SECRET_FILES for value in values]
# A dotenv file written by an agent's patch (Codex's apply_patch): its lines start with "+".
PATCHED_DOTENV = "FEATURE_PEPPER=patched-pepper-5521\nPAYMENTS_MODE=live-patched-7734\n"
PATCHED_DOTENV_VALUES = ["patched-pepper-5521", "live-patched-7734"]

# Contents of a .env file a tool reads: every value is a secret, whatever it looks like.
DOTENV = "STRIPE_WEBHOOK_HINT=whsec_unremarkable_value_42\nFEATURE_SALT=plain-looking-salt-8841\n"
DOTENV_VALUES = ["whsec_unremarkable_value_42", "plain-looking-salt-8841"]

PRIVATE_TEXT = "my home alarm code is 55-13-97"
