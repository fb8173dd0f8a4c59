// sw.js shows the notifications hush sends. The push data is the JSON hush
// renders for Web Push: {"notification": {title, body, image, tag,
// app_badge}, "data": {...}}; a silent push has only "data".

self.addEventListener("push", (event) => {
  const msg = event.data ? event.data.json() : {};
  const n = msg.notification;
  const work = [];
  if (n) {
    work.push(self.registration.showNotification(n.title || "", {
      body: n.body,
      image: n.image,
      tag: n.tag,
      data: msg.data,
    }));
    if (n.app_badge !== undefined && navigator.setAppBadge) {
      work.push(n.app_badge === 0 ? navigator.clearAppBadge() : navigator.setAppBadge(n.app_badge));
    }
  }
  // A silent push (data only) is for the page: hand it to open clients.
  work.push(self.clients.matchAll({ type: "window" }).then((clients) => {
    for (const c of clients) c.postMessage({ hushPush: msg.data || {} });
  }));
  event.waitUntil(Promise.all(work));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || "/";
  event.waitUntil(self.clients.openWindow(url));
});
