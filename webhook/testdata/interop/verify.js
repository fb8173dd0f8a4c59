// verify.js: checks webhook requests with npm's standardwebhooks, an
// implementation of the Standard Webhooks specification written apart
// from hush. Standard input: a JSON array of {secret, headers, body}
// (body in base64, as received); standard output: a JSON array of
// {ok, error}, one per request, in order.
const { Webhook } = require("standardwebhooks");

let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(({ secret, headers, body }) => {
    try {
      new Webhook(secret).verify(Buffer.from(body, "base64"), headers);
      return { ok: true };
    } catch (e) {
      return { ok: false, error: String(e && e.message) };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
