/**
 * The published test signing key of webhook deliveries: a fixed RSA-2048 key pair, so that a test (or
 * a host app's own verification code) can verify real deliveries without configuring anything.
 * Deliveries are signed with it unless the service is given `webhookSigningKey`. It is public: a
 * delivery signed with it proves nothing outside tests (see docs/webhooks.md).
 */

/** The test key's private half (PKCS #8, PEM): what deliveries are signed with by default. */
export const TEST_WEBHOOK_PRIVATE_KEY = `-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC9skYJwW8fP/55
J4FmlWj1c4pKbhaahLLghxwwn1qYojGSIXcacqLaSzkm6azCa/IXGSD07F/6WBsA
tg+B6HrJm4JUiT77OhPNHC+QfuhZYDZHiayCUuHx/wf1g3zqhFOZjE/us7BR+xA9
aIXO+EgitLCf3PjVqhfEoxJ9cUiI0y0ULdDHwLh/ATaH5XSaNKVd0SQGC14VnUg6
7SL9u3jlPN5Z0Ey7l2v6mBEAdCcmzcrcloQxNK1xyWx8O6u2IKTfjKqT2RGBYvHf
gMLt5Gw43mkvQQerkzvwP2iAYTGeZaFGwCavTehUBB7AVbW1DQtcrJVFDJd5wOZB
9XjsloZrAgMBAAECggEAD97sW2DKwykPlj0jzbYRzkaPGxoQNXfruIhLtGLotmnZ
G6145KATSvZnMjLzu5J12NCtgE0nqVWZilr94icJFHjSLYnY2Jw4nH0CtIqoAuF4
7E3mJNzG8maD2NrAgHIQxbR52lhzSvCZhu6JrDhhxKTGCdUrIA+dv6hkrohKgscc
Gi6eZLMa9PrVTvb4njwEpDPlRRILBtOXd/iBa5CZv4jyNichM8K8IGi0+LyJ8kea
0Q+EDnX4NOt/RdOXK92Z9v+mfxVhBGpny6IgfL/qUA5m1M7EpdB7fCTUIY5Anl+D
tT/AQZDmPxAd3blp/ibFODOlPyoJs1zNOrU11iSU3QKBgQDsZAEH5mpigx0K7PrF
8ZuGEwjTrSAJTFjp/+Qb5mpGgyExQKAfoDQeVUX7zYvD6PSXT5ZrDCJQ1ki8JzG9
ErOQxB5TZJDNFUfvjy6T4OB7KYIqAbAYb9lwu6xzWCNy6xilIvztc/Edv5fU4hwT
plInyBoBXKNZkC4tIBRy/H3ZBwKBgQDNbqtea1clR11ILJd+JNS7KX8IP0qGfh2g
N8JHyN1kyEJRg3IQ0ZD6y1QZxbh3ioOQkhtMYxGXyA2WQo5uRh/NYy++tgvcckIP
Iyv7YZ2Xij1/gDlnegykrl26kWijpJn8M7yd6Tvr+AHs19ktd7PTiODtyJfj8CuQ
fAnB2CKCfQKBgEDKzEmJC0HDJDO5bqbQqUsfbnzuZ+iEh55jp/dJuXloObHRP9JL
S93Ai7UPyq5A7MGIa/cdVU6I3VjM+WIUfSlBx/odh17e5V+xBBg+O+kmIGo5GjYo
ehXfKs5Wqyi1bYTdySugasc3m3sbGoz8Ompy+0XCSXekADQYJeK6eBgDAoGAX3lB
l54XYDHsfnCK74s6eslsSm7vudW++wku96G4kvAnMi7+wiZDVOtOaLPlaVksj/H3
Uebw9DN7bQv9me5pNVEVjXKZzJglb1ePR0M0tIsAzdLP2vF0Es0ermiJ0xPapMV+
sX0F5kLa0jH2sxTgtDz3HEuPm9WwyXN8LWS/lRkCgYBlltTgX6NBEN1Q9nJAo/j6
+lRQtWritTzu4jvxtkehkdC+oZ7aAMhOE24QxaVNcltaCqTrsJoy/nA0uOPvauTS
B51cZY9HbkYWNxMhchqgoop378YxUqi9My/mYhf1TcDyTOl9CHQ5bKdbgvDlhB4e
mY9H91bkzRRVIDJlUojd9w==
-----END PRIVATE KEY-----
`

/** The test key's public half (SPKI, PEM): what a receiver verifies deliveries with. */
export const TEST_WEBHOOK_PUBLIC_KEY = `-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvbJGCcFvHz/+eSeBZpVo
9XOKSm4WmoSy4IccMJ9amKIxkiF3GnKi2ks5JumswmvyFxkg9Oxf+lgbALYPgeh6
yZuCVIk++zoTzRwvkH7oWWA2R4msglLh8f8H9YN86oRTmYxP7rOwUfsQPWiFzvhI
IrSwn9z41aoXxKMSfXFIiNMtFC3Qx8C4fwE2h+V0mjSlXdEkBgteFZ1IOu0i/bt4
5TzeWdBMu5dr+pgRAHQnJs3K3JaEMTStcclsfDurtiCk34yqk9kRgWLx34DC7eRs
ON5pL0EHq5M78D9ogGExnmWhRsAmr03oVAQewFW1tQ0LXKyVRQyXecDmQfV47JaG
awIDAQAB
-----END PUBLIC KEY-----
`
