package setup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hushpush/hush/internal/redismetrics"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
	"github.com/hushpush/hush/worker/httpapi"
)

// Serve runs one hush process configured by cfg: the task worker, the HTTP
// API and /healthz, /readyz, /metrics on cfg.HTTPAddr, for the apps of the
// HUSH_* keys and of HUSH_APPS_FILE. It runs until ctx is done, then stops
// taking work, lets in-flight deliveries finish (or hands them back to
// their queues) and returns nil after a clean shutdown. While it runs, a
// change of the apps file or of a credential file, or SIGHUP, reloads the
// apps (see reloader).
func Serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return serve(ctx, cfg, log, hup, appsPollInterval)
}

// serve is Serve with the reload's trigger and poll interval given: tests
// send on hup rather than signal the process.
func serve(ctx context.Context, cfg Config, log *slog.Logger, hup <-chan os.Signal, poll time.Duration) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rdb, closeRedis, err := openRedis(cfg, log)
	if err != nil {
		return err
	}
	defer closeRedis()
	redisMetrics := redismetrics.New()
	rdb.AddHook(redisMetrics)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = rdb.Ping(pingCtx).Err()
	cancel()
	if err != nil {
		key, where := cfg.redisKey()
		if strings.HasPrefix(cfg.RedisURL, "rediss://") {
			return keyErr(key, "Redis at %s does not answer (%v): rediss:// speaks TLS, which a Redis without TLS never answers (use redis:// for it); else start it, or point %s at one that runs", where, err, key)
		}
		return keyErr(key, "Redis at %s does not answer (%v): start it, or point %s at one that runs", where, err, key)
	}
	if err := checkEviction(ctx, cfg, rdb); err != nil {
		return err
	}

	policy, err := cfg.policy()
	if err != nil {
		return err
	}
	loc, err := cfg.defaultLocation()
	if err != nil {
		return err
	}
	webhookTypes, err := cfg.webhookTypes()
	if err != nil {
		return err
	}
	webhookSecrets, err := cfg.webhookSecrets()
	if err != nil {
		return err
	}
	gen, err := buildApps(ctx, cfg, rdb, true, true, log)
	if err != nil {
		return err
	}
	apps, err := worker.NewApps(gen.apps...)
	if err != nil {
		gen.close()
		return err
	}
	// The tokens for some apps only: with none at start the API takes
	// HUSH_API_TOKEN alone (or anything, without it), and a reload may not
	// change that (reloader.reload).
	var tokens *httpapi.Tokens
	if len(gen.tokens) > 0 {
		tokens = httpapi.NewTokens(gen.tokens)
	}
	reload := newReloader(cfg, rdb, apps, gen, tokens, log)
	defer reload.close()
	pacer, err := throttle.NewPacer(rdb, throttle.Options{})
	if err != nil {
		return fmt.Errorf("pacer: %w", err)
	}

	w, err := worker.New(rdb, worker.Options{
		Apps:            apps,
		Pacer:           pacer,
		DefaultLocation: loc,
		Queues:          cfg.Queues,
		DeliveryShards:  cfg.DeliveryShards,
		Concurrency:     cfg.Concurrency,
		HeldConcurrency: cfg.HeldConcurrency,
		MaxRetry:        cfg.MaxRetry,
		MaxThrottled:    cfg.MaxThrottled,
		Bypass:          cfg.bypass(),
		WebhookURL:      cfg.WebhookURL,
		WebhookSecrets:  webhookSecrets,
		WebhookTypes:    webhookTypes,
		EventsMaxLen:    cfg.EventsMaxlen,
		AppWait:         cfg.AppWait,
		Eviction:        cfg.eviction(),
		ShutdownTimeout: cfg.ShutdownTimeout,
		JobRetention:    cfg.JobRetention,
		Logger:          log,
		Metrics:         []prometheus.Collector{redisMetrics},
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return &KeyError{Key: "HUSH_HTTP_ADDR", Err: err}
	}
	httpSrv := &http.Server{
		Handler:           httpapi.New(w, w.Client(), httpapi.Options{Token: cfg.APIToken, Tokens: tokens, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	httpDone := make(chan error, 1)
	go func() { httpDone <- httpSrv.Serve(ln) }()
	log.Info("http listening", "addr", ln.Addr().String(),
		"limits", policy.String(), "categories", strings.Join(slices.Sorted(maps.Keys(policy.Categories)), ","),
		"quiet_hours", policy.Quiet.String(), "timezone", loc.String(),
		"bypass", cfg.ThrottleBypass, "api_auth", cfg.APIToken != "" || tokens != nil, "app_tokens", len(gen.tokens), "apps", apps.Names())

	reloadCtx, stopReload := context.WithCancel(ctx)
	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		reload.run(reloadCtx, poll, hup)
	}()
	runErr := w.Run(ctx)
	stopReload()
	<-reloadDone

	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	httpErr := httpSrv.Shutdown(shutCtx)
	if err := <-httpDone; !errors.Is(err, http.ErrServerClosed) {
		httpErr = errors.Join(httpErr, err)
	}
	if httpErr != nil {
		httpErr = fmt.Errorf("http server: %w", httpErr)
	}
	return errors.Join(runErr, httpErr)
}
