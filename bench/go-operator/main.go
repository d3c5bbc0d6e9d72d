// A minimal controller-runtime operator doing keyward's Project create path, for the engine
// bench's side-by-side (ENGINE_BENCH_GO=1, bench/engine.bench.ts): reads from the cache, a lookup
// by slug at the service, the create, one status patch and one Event per Project. It has none of
// keyward's guarantees (no create-pending mark, no finalizer): it is the floor a Go operator of
// the field would reach on the same apiserver and emulator, not a model to copy.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var projectGVK = schema.GroupVersionKind{Group: "keyward.dev", Version: "v1alpha1", Kind: "Project"}

type reconciler struct {
	client   client.Client
	recorder record.EventRecorder
	http     *http.Client
	baseURL  string
	token    string
}

func (r *reconciler) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.baseURL+path, reader)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := r.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(projectGVK)
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if id, _, _ := unstructured.NestedString(obj.Object, "status", "projectId"); id != "" {
		return ctrl.Result{}, nil
	}
	slug := obj.GetName()
	status, _, err := r.call(ctx, http.MethodGet, "/api/v1/projects/slug/"+slug, nil)
	if err != nil {
		return ctrl.Result{}, err
	}
	if status != http.StatusNotFound {
		return ctrl.Result{}, fmt.Errorf("slug %s: HTTP %d", slug, status)
	}
	status, body, err := r.call(ctx, http.MethodPost, "/api/v2/workspace", map[string]string{"projectName": slug, "slug": slug})
	if err != nil {
		return ctrl.Result{}, err
	}
	if status != http.StatusOK {
		return ctrl.Result{}, fmt.Errorf("create %s: HTTP %d", slug, status)
	}
	var created struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	if err := json.Unmarshal(body, &created); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(obj.DeepCopy())
	now := time.Now().UTC().Format(time.RFC3339)
	ready := map[string]any{
		"type": "Ready", "status": "True", "reason": "Available", "message": "the external object is available",
		"observedGeneration": obj.GetGeneration(), "lastTransitionTime": now,
	}
	if err := unstructured.SetNestedField(obj.Object, map[string]any{
		"projectId": created.Project.ID, "observedGeneration": obj.GetGeneration(), "conditions": []any{ready},
	}, "status"); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.client.Status().Patch(ctx, obj, patch); err != nil {
		return ctrl.Result{}, err
	}
	r.recorder.Event(obj, "Normal", "Created", "created the external object")
	return ctrl.Result{}, nil
}

func main() {
	namespace := flag.String("namespace", "", "the namespace to watch")
	baseURL := flag.String("base-url", "", "the service's base URL")
	workers := flag.Int("concurrency", 4, "reconciles at once")
	flag.Parse()
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{*namespace: {}}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := &reconciler{
		client: mgr.GetClient(), recorder: mgr.GetEventRecorderFor("go-operator"),
		http:    &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		baseURL: *baseURL, token: os.Getenv("SERVICE_TOKEN"),
	}
	project := &unstructured.Unstructured{}
	project.SetGroupVersionKind(projectGVK)
	err = ctrl.NewControllerManagedBy(mgr).For(project).WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).Complete(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("go-operator: starting")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
