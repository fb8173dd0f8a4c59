// decrypt.js reads {"body", "uaPrivate", "auth"} (base64url) as JSON on
// standard input and writes the plaintext http_ece decrypts (aes128gcm,
// the user agent's side of RFC 8291) to standard output.
const crypto = require("crypto");
const ece = require("http_ece");

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const req = JSON.parse(input);
  const ua = crypto.createECDH("prime256v1");
  ua.setPrivateKey(Buffer.from(req.uaPrivate, "base64url"));
  const plain = ece.decrypt(Buffer.from(req.body, "base64url"), {
    version: "aes128gcm",
    privateKey: ua,
    authSecret: req.auth,
  });
  process.stdout.write(plain);
});
