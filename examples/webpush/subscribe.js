// subscribe.js registers the service worker, subscribes to push with the
// VAPID public key as applicationServerKey, and posts the subscription
// (the JSON hush takes as a webpush device's token) to the backend.

// applicationServerKey turns the base64url public key into the bytes
// pushManager.subscribe wants.
function applicationServerKey(base64url) {
  const padded = base64url + "=".repeat((4 - (base64url.length % 4)) % 4);
  const raw = atob(padded.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

function meta(name) {
  return document.querySelector(`meta[name="${name}"]`).content;
}

async function subscribe() {
  const status = document.getElementById("status");
  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    status.textContent = "This browser cannot receive push notifications.";
    return;
  }
  try {
    const registration = await navigator.serviceWorker.register("sw.js");
    await navigator.serviceWorker.ready;
    const subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: applicationServerKey(meta("vapid-public-key")),
    });
    const answer = await fetch(meta("subscriptions-url"), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(subscription),
    });
    status.textContent = answer.ok ? "Subscribed." : `The backend answered ${answer.status}.`;
  } catch (err) {
    status.textContent = `Could not subscribe: ${err}`;
  }
}

document.getElementById("subscribe").addEventListener("click", subscribe);
// A page may also subscribe at once when permission was given before.
if (window.Notification && Notification.permission === "granted") {
  subscribe();
}
