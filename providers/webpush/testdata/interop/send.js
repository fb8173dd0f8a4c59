// send.js sends one push with web-push: it reads {"subscription",
// "payload", "subject", "vapid": {publicKey, privateKey} or null} as JSON on
// standard input; without vapid keys it generates a pair. It writes
// {"status", "vapid"} as JSON. A push service with a private CA needs
// NODE_EXTRA_CA_CERTS.
const webpush = require("web-push");

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", async () => {
  const req = JSON.parse(input);
  const vapid = req.vapid || webpush.generateVAPIDKeys();
  if (!req.subscription) {
    process.stdout.write(JSON.stringify({ vapid }));
    return;
  }
  try {
    const res = await webpush.sendNotification(req.subscription, req.payload, {
      vapidDetails: { subject: req.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
      TTL: 60,
      contentEncoding: "aes128gcm",
    });
    process.stdout.write(JSON.stringify({ status: res.statusCode, vapid }));
  } catch (err) {
    process.stdout.write(JSON.stringify({ status: err.statusCode || 0, error: String(err.body || err), vapid }));
  }
});
