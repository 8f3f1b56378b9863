"""A test suite in another language using the vault's leak checks and exposure over HTTP.

Usage: python3 leaks_check.py BASE_URL ADMIN_TOKEN MANAGEMENT_KEY. Standard library only.
Exits 0 and prints "ok" when every check holds; otherwise fails with the check that did not.
"""
import json
import sys
import urllib.request

BASE, ADMIN, MANAGEMENT = sys.argv[1], sys.argv[2], sys.argv[3]
CARD = "4111111111111111"


def call(method, path, body=None, key=None, admin=False, text=None):
    headers = {}
    data = None
    if text is not None:
        headers["content-type"] = "text/plain"
        data = text.encode()
    elif body is not None:
        headers["content-type"] = "application/json"
        data = json.dumps(body).encode()
    if key:
        headers["SVC-API-KEY"] = key
    if admin:
        headers["authorization"] = "Bearer " + ADMIN
    request = urllib.request.Request(BASE + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request) as answer:
        raw = answer.read().decode()
        return json.loads(raw) if raw else None, raw


reveal = [{"description": "all", "priority": 1, "container": "/", "transform": "reveal",
           "permissions": ["token:create", "token:read"]}]
app, _ = call("POST", "/applications", {"name": "checkout-api", "type": "private", "rules": reveal},
              key=MANAGEMENT)
key = app["key"]
token, _ = call("POST", "/tokens", {"type": "card_number", "data": CARD}, key=key)
read, _ = call("GET", "/tokens/" + token["id"], key=key)
assert read["data"] == CARD, "the token reads back revealed"

logs = ["order 17 paid", "charging card 4111 1111 1111 1111 for 10.00"]
found, raw = call("POST", "/_test/leaks", {"value": logs}, admin=True)
assert found["leaked"] is True, found
assert found["findings"] == [{"token_id": token["id"], "canary": False, "encoding": "digits",
                              "path": "$[1]", "offset": 14}], found
assert CARD not in raw, "a finding never quotes the plaintext"

clean, _ = call("POST", "/_test/leaks", admin=True, text="charged card ending 1111")
assert clean == {"leaked": False, "findings": []}, clean

exposure, _ = call("GET", "/_test/exposure", admin=True)
assert exposure["total"] == 1, exposure
assert exposure["by_application"] == {"checkout-api": 1}, exposure
assert exposure["by_operation"] == {"token.get": 1}, exposure
assert exposure["rows"][0]["token_id"] == token["id"], exposure

print("ok")
