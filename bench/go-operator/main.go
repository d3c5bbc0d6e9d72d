// A minimal controller-runtime operator doing keyward's Project create path, for the engine
// bench's side-by-side (ENGINE_BENCH_GO=1, bench/engine.bench.ts): reads from the cache, a lookup
// by slug at the service, the create, one status patch and one Event per Project. The status is
// keyward's (the project's fields and environments, Ready and Synced), so that the apiserver
// stores, checks and sends objects of the same size for both. Without
// --create-guard it has none of keyward's guarantees (no create-started mark, no id in
// metadata): the floor a Go operator of the field would reach on the same apiserver and
// emulator, not a model to copy.
//
// --create-guard gives it keyward's guarantee, with keyward's writes: before the service's create
// it patches the keyward.dev/create-started mark (time and UID; the finalizer in the same patch
// when the spec asks for one, deletionPolicy Delete, as keyward does) with a resourceVersion
// precondition; a pass that finds its own mark and no id in status adopts the project its slug
// finds instead of creating; after the create it patches the id into keyward.dev/external-id
// (what a backup keeps), then the status and the Event: 4 apiserver writes per create, as keyward.
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
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

var projectGVK = schema.GroupVersionKind{Group: "keyward.dev", Version: "v1alpha1", Kind: "Project"}

type reconciler struct {
	client   client.Client
	recorder record.EventRecorder
	http     *http.Client
	baseURL  string
	token    string
	guard    bool
}

const (
	createStarted = "keyward.dev/create-started"
	externalID    = "keyward.dev/external-id"
	finalizer     = "keyward.dev/finalizer"
)

type environment struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// The service's project, decoded into the fields the status shows (keyward's Project status).
type project struct {
	ID                  string        `json:"id"`
	Name                string        `json:"name"`
	Slug                string        `json:"slug"`
	Type                string        `json:"type"`
	OrgID               string        `json:"orgId"`
	Version             *int64        `json:"version"`
	HasDeleteProtection bool          `json:"hasDeleteProtection"`
	Environments        []environment `json:"environments"`
}

// statusOf: keyward's Project status for p, so that both write objects of the same size.
func statusOf(p project, generation int64, now string) map[string]any {
	envs := make([]any, 0, len(p.Environments))
	for _, e := range p.Environments {
		envs = append(envs, map[string]any{"id": e.ID, "name": e.Name, "slug": e.Slug})
	}
	condition := func(kind, reason, message string) map[string]any {
		return map[string]any{
			"type": kind, "status": "True", "reason": reason, "message": message,
			"observedGeneration": generation, "lastTransitionTime": now,
		}
	}
	status := map[string]any{
		"projectId": p.ID, "slug": p.Slug, "name": p.Name, "type": p.Type, "orgId": p.OrgID,
		"hasDeleteProtection": p.HasDeleteProtection, "environments": envs, "observedGeneration": generation,
		"conditions": []any{
			condition("Ready", "Available", "the external object is available"),
			condition("Synced", "ReconcileSuccess", "the external object matches the spec"),
		},
	}
	if p.Version != nil {
		status["version"] = *p.Version
	}
	return status
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
	status, found, err := r.call(ctx, http.MethodGet, "/api/v1/projects/slug/"+slug, nil)
	if err != nil {
		return ctrl.Result{}, err
	}
	var p project
	switch {
	case status == http.StatusOK && r.guard && ownMark(obj):
		// Created before a crash, its id never recorded: ours, adopted.
		if err := json.Unmarshal(found, &p); err != nil {
			return ctrl.Result{}, err
		}
	case status != http.StatusNotFound:
		return ctrl.Result{}, fmt.Errorf("slug %s: HTTP %d", slug, status)
	default:
		if r.guard {
			// The mark (and a finalizer the spec asks for) before the call, on the version read.
			base := obj.DeepCopy()
			annotations := obj.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[createStarted] = time.Now().UTC().Format(time.RFC3339Nano) + " " + string(obj.GetUID())
			obj.SetAnnotations(annotations)
			if policy, _, _ := unstructured.NestedString(obj.Object, "spec", "deletionPolicy"); policy == "Delete" {
				obj.SetFinalizers(append(obj.GetFinalizers(), finalizer))
			}
			if err := r.client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
				return ctrl.Result{}, err
			}
		}
		status, body, err := r.call(ctx, http.MethodPost, "/api/v2/workspace", map[string]string{"projectName": slug, "slug": slug})
		if err != nil {
			return ctrl.Result{}, err
		}
		if status != http.StatusOK {
			return ctrl.Result{}, fmt.Errorf("create %s: HTTP %d", slug, status)
		}
		var created struct {
			Project project `json:"project"`
		}
		if err := json.Unmarshal(body, &created); err != nil {
			return ctrl.Result{}, err
		}
		p = created.Project
	}
	if r.guard {
		// The id where a backup keeps it, before the status that confirms the create.
		base := obj.DeepCopy()
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[externalID] = p.ID
		obj.SetAnnotations(annotations)
		if err := r.client.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			return ctrl.Result{}, err
		}
	}
	patch := client.MergeFrom(obj.DeepCopy())
	now := time.Now().UTC().Format(time.RFC3339)
	if err := unstructured.SetNestedField(obj.Object, statusOf(p, obj.GetGeneration(), now), "status"); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.client.Status().Patch(ctx, obj, patch); err != nil {
		return ctrl.Result{}, err
	}
	r.recorder.Event(obj, "Normal", "Created", "created the external object")
	return ctrl.Result{}, nil
}

// ownMark: this object's create-started mark (its UID), not a copy's.
func ownMark(obj *unstructured.Unstructured) bool {
	mark, ok := obj.GetAnnotations()[createStarted]
	return ok && strings.HasSuffix(mark, " "+string(obj.GetUID()))
}

func main() {
	namespace := flag.String("namespace", "", "the namespace to watch")
	guard := flag.Bool("create-guard", false, "keyward's create guard: the create-started mark before the create, the id in metadata after it")
	baseURL := flag.String("base-url", "", "the service's base URL")
	workers := flag.Int("concurrency", 4, "reconciles at once")
	flag.Parse()
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{*namespace: {}}},
		// Reads from the informer cache, as keyward's: controller-runtime's client reads an
		// Unstructured object live from the apiserver unless told otherwise (one GET per pass).
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := &reconciler{
		client: mgr.GetClient(), recorder: mgr.GetEventRecorderFor("go-operator"),
		http:    &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		baseURL: *baseURL, token: os.Getenv("SERVICE_TOKEN"), guard: *guard,
	}
	project := &unstructured.Unstructured{}
	project.SetGroupVersionKind(projectGVK)
	// Its own writes (the marks, the status) wake nothing, as keyward's own writes do not
	// (src/engine/controller.ts onlyOwnChanges): a new generation, a create or a delete does.
	err = ctrl.NewControllerManagedBy(mgr).
		For(project, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).Complete(r)
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
