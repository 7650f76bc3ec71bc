package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/syncbuf"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// sideBySideOutputs are the outputs compared with kubectl's, by -o value ("" is the default).
var sideBySideOutputs = []string{"", "wide", "name", "json", "yaml",
	"custom-columns=NAME:.metadata.name,NAMESPACE:.metadata.namespace,RV:.metadata.resourceVersion,LABELS:.metadata.labels"}

// sideBySideExtras are kubectl get's other print flags, compared watching.
var sideBySideExtras = [][]string{
	{"--show-labels"},
	{"-L", "side-by-side,changed"},
	{"--no-headers"},
	{"--output-watch-events"},
	{"-o", "wide", "--output-watch-events", "--show-labels"},
	{"-o", "name", "--output-watch-events"},
	{"-o", "json", "--output-watch-events"},
	{"-o", "jsonpath={.metadata.name} {.metadata.resourceVersion}{\"\\n\"}"},
	{"-o", "go-template={{.metadata.name}} {{.kind}}{{\"\\n\"}}"},
	{"--show-kind"},
}

// sideResource is one resource of the side-by-side test: how kubectl users name it and how to
// create, change and delete one of its objects.
type sideResource struct {
	arg        string
	namespaced bool
	create     func(ctx context.Context, cs kubernetes.Interface, ns, name string, labels map[string]string) error
	relabel    func(ctx context.Context, cs kubernetes.Interface, ns, name, key, value string) error
	delete     func(ctx context.Context, cs kubernetes.Interface, ns, name string) error
}

func sideResources() []sideResource {
	meta := func(ns, name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	}
	container := []corev1.Container{{Name: "app", Image: "registry.example/app:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}
	// A pod without a kubelet stays Pending; without a token volume its spec is what was sent.
	noToken := false
	opts := metav1.CreateOptions{}
	return []sideResource{
		{arg: "configmaps", namespaced: true,
			create: func(ctx context.Context, cs kubernetes.Interface, ns, name string, l map[string]string) error {
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta(ns, name, l), Data: map[string]string{"a": "1", "b": "2"}}, opts)
				return err
			},
			relabel: func(ctx context.Context, cs kubernetes.Interface, ns, name, k, v string) error {
				o, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					o.Labels[k] = v
					o.Data["c"] = "3"
					_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, o, metav1.UpdateOptions{})
				}
				return err
			},
			delete: func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
				return cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}},
		{arg: "secrets", namespaced: true,
			create: func(ctx context.Context, cs kubernetes.Interface, ns, name string, l map[string]string) error {
				_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta(ns, name, l), Type: corev1.SecretTypeOpaque,
					Data: map[string][]byte{"password": []byte("hunter2")}}, opts)
				return err
			},
			relabel: func(ctx context.Context, cs kubernetes.Interface, ns, name, k, v string) error {
				o, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					o.Labels[k] = v
					_, err = cs.CoreV1().Secrets(ns).Update(ctx, o, metav1.UpdateOptions{})
				}
				return err
			},
			delete: func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
				return cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}},
		{arg: "deployments.apps", namespaced: true,
			create: func(ctx context.Context, cs kubernetes.Interface, ns, name string, l map[string]string) error {
				sel := map[string]string{"app": name}
				_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta(ns, name, l), Spec: appsv1.DeploymentSpec{
					Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: sel},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: container}}}}, opts)
				return err
			},
			relabel: func(ctx context.Context, cs kubernetes.Interface, ns, name, k, v string) error {
				o, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					o.Labels[k] = v
					o.Spec.Replicas = new(int32(3))
					_, err = cs.AppsV1().Deployments(ns).Update(ctx, o, metav1.UpdateOptions{})
				}
				return err
			},
			delete: func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
				return cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}},
		{arg: "services", namespaced: true,
			create: func(ctx context.Context, cs kubernetes.Interface, ns, name string, l map[string]string) error {
				_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta(ns, name, l), Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app": name},
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, opts)
				return err
			},
			relabel: func(ctx context.Context, cs kubernetes.Interface, ns, name, k, v string) error {
				o, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					o.Labels[k] = v
					o.Spec.Ports = append(o.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)})
					_, err = cs.CoreV1().Services(ns).Update(ctx, o, metav1.UpdateOptions{})
				}
				return err
			},
			delete: func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
				return cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}},
		{arg: "pods", namespaced: true,
			create: func(ctx context.Context, cs kubernetes.Interface, ns, name string, l map[string]string) error {
				_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: meta(ns, name, l),
					Spec: corev1.PodSpec{Containers: container, AutomountServiceAccountToken: &noToken}}, opts)
				return err
			},
			relabel: func(ctx context.Context, cs kubernetes.Interface, ns, name, k, v string) error {
				o, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					o.Labels[k] = v
					_, err = cs.CoreV1().Pods(ns).Update(ctx, o, metav1.UpdateOptions{})
				}
				return err
			},
			delete: func(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
				// No kubelet: a grace period would leave the pod Terminating for ever.
				return cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
			}},
		{arg: "namespaces",
			create: func(ctx context.Context, cs kubernetes.Interface, _, name string, l map[string]string) error {
				_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta("", name, l)}, opts)
				return err
			},
			relabel: func(ctx context.Context, cs kubernetes.Interface, _, name, k, v string) error {
				o, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					o.Labels[k] = v
					_, err = cs.CoreV1().Namespaces().Update(ctx, o, metav1.UpdateOptions{})
				}
				return err
			},
			// No namespace controller: a deleted namespace stays Terminating, a MODIFIED event.
			delete: func(ctx context.Context, cs kubernetes.Interface, _, name string) error {
				return cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
			}},
	}
}

// wideGap splits a table row into its cells: kubectl's tabwriter puts 3 spaces or more
// between columns, and a cell has at most one space in a row ("NOMINATED NODE").
var wideGap = regexp.MustCompile(` {3,}`)

// ageCell is what kubectl's AGE cells read: 5s, 3m, 2m10s, 4h, <unknown>.
var ageCell = regexp.MustCompile(`^(\d+[smhdy])+$|^<unknown>$|^<invalid>$`)

// withoutAge is a table output with its AGE column cut out: the age is the one cell the two
// compute at different instants. Other outputs are compared whole.
func withoutAge(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	age := -1
	var rows []string
	for _, l := range lines {
		cells := wideGap.Split(strings.TrimRight(l, " "), -1)
		if age < 0 {
			for i, c := range cells {
				if c == "AGE" {
					age = i
				}
			}
		}
		switch {
		case age >= 0 && age < len(cells):
			cells = append(cells[:age:age], cells[age+1:]...)
		case age < 0:
			// No header (--no-headers): the cell that reads as an age.
			for i, c := range cells {
				if ageCell.MatchString(c) {
					cells = append(cells[:i:i], cells[i+1:]...)
					break
				}
			}
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	return rows
}

// `rewatch watch` and kubectl get -w (both v1.37.2, against the same kube-apiserver), side by
// side, for ConfigMaps, Secrets, Deployments, Services, Pods and Namespaces, with the default
// table, -o wide, name, json, yaml and custom-columns, watching and --watch-only: the initial
// list and then a label change, a deletion and a creation print the same rows and the same
// cells but AGE (docs/cli.md, "Objects"). kubectl's table is the server's (server-side
// printing), and so is rewatch's.
func TestCLIWatchSideBySideWithKubectl(t *testing.T) {
	b := sharedReal(t)
	real, ok := b.(*testbackend.Real)
	require.True(t, ok, "the shared backend is a real kube-apiserver")
	cs, err := kubernetes.NewForConfig(real.Server.RESTConfig())
	require.NoError(t, err)
	kubectl := kubectlBin(t)
	bin := buildCLI(t)
	// Each gets a proxy of its own, which adds the credentials, leaving Accept as it is.
	kp := plainProxy(t, b)
	rp := plainProxy(t, b)
	kubeKubeconfig, rewatchKubeconfig := proxyKubeconfig(t, kp.URL()), proxyKubeconfig(t, rp.URL())

	for i, res := range sideResources() {
		t.Run(res.arg, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run := fmt.Sprintf("sbs%d-%d", i, time.Now().UnixNano()%1e6)
			ns := ""
			if res.namespaced {
				ns = run
				require.NoError(t, b.EnsureNamespace(ctx, ns))
				// No controller-manager makes the namespace's default service account, which a
				// pod's admission looks up.
				_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			name := func(s string) string { return run + "-" + s }
			labels := func() map[string]string { return map[string]string{"side-by-side": run} }
			for _, n := range []string{"a", "b"} {
				require.NoError(t, res.create(ctx, cs, ns, name(n), labels()))
			}
			type pair struct {
				label      string
				kout, rout syncbuf.Buffer
				kerr, rerr syncbuf.Buffer
				kcmd, rcmd *exec.Cmd
				table      bool
				named      bool
			}
			var pairs []*pair
			start := func(label string, table, named bool, args ...string) {
				p := &pair{label: label, table: table, named: named}
				p.kcmd = exec.CommandContext(ctx, kubectl, append([]string{"get", "--kubeconfig", kubeKubeconfig}, args...)...)
				p.kcmd.Stdout, p.kcmd.Stderr = &p.kout, &p.kerr
				p.rcmd = exec.CommandContext(ctx, bin, append([]string{"watch", "--trace=json", "--kubeconfig", rewatchKubeconfig}, args...)...)
				p.rcmd.Stdout, p.rcmd.Stderr = &p.rout, &p.rerr
				require.NoError(t, p.kcmd.Start())
				require.NoError(t, p.rcmd.Start())
				pairs = append(pairs, p)
			}
			selected := []string{res.arg, "-l", "side-by-side=" + run}
			if ns != "" {
				selected = append(selected, "-n", ns)
			}
			for _, output := range sideBySideOutputs {
				for _, flag := range []string{"-w", "--watch-only"} {
					args := append([]string{flag}, selected...)
					if output != "" {
						args = append(args, "-o", output)
					}
					start(fmt.Sprintf("%s -o %q", flag, output), output == "" || output == "wide", false, args...)
				}
			}
			// kubectl get's other print flags, watching.
			for _, extra := range sideBySideExtras {
				args := append([]string{"-w"}, selected...)
				table := !slices.Contains(extra, "-o") || slices.Contains(extra, "wide")
				start(strings.Join(extra, " "), table, false, append(args, extra...)...)
			}
			// -A: the NAMESPACE column (the label selector keeps other tests' objects out).
			start("-A", true, false, "-w", res.arg, "-l", "side-by-side="+run, "-A")
			// One object, by name.
			named := []string{"-w", res.arg + "/" + name("a")}
			if ns != "" {
				named = append(named, "-n", ns)
			}
			start("NAME", true, true, named...)
			start("NAME -o yaml", false, true, append(named, "-o", "yaml")...)
			defer func() {
				for _, p := range pairs {
					_ = p.kcmd.Process.Kill()
					_ = p.rcmd.Process.Kill()
					_ = p.kcmd.Wait()
					_ = p.rcmd.Wait()
				}
			}()
			describe := func(p *pair) string {
				return fmt.Sprintf("%s %s\nkubectl:\n%s%s\nrewatch:\n%s%s", res.arg, p.label, p.kout.String(), p.kerr.String(), p.rout.String(), p.rerr.String())
			}
			// Both are watching before anything changes: every kubectl has opened its watch
			// (after its list), every rewatch has said so.
			resourcePath := "/" + strings.Split(res.arg, ".")[0]
			require.True(t, waitFor(60*time.Second, func() bool {
				watches := 0
				for _, r := range kp.Requests() {
					if r.Kind == faultproxy.Watch && strings.HasSuffix(r.Path, resourcePath) {
						watches++
					}
				}
				if watches < len(pairs) {
					return false
				}
				for _, p := range pairs {
					if !strings.Contains(p.rerr.String(), `"cause":"watch-opened"`) {
						return false
					}
				}
				return true
			}), "not all watching")

			require.NoError(t, res.relabel(ctx, cs, ns, name("a"), "changed", "yes"))
			require.NoError(t, res.delete(ctx, cs, ns, name("b")))
			require.NoError(t, res.create(ctx, cs, ns, name("c"), labels()))
			for _, p := range pairs {
				// The creation is the last change: once both printed it, both printed everything.
				// A named watch sees only its object's change, its relabelling. Either may be
				// seen mid-object (kubectl writes a JSON or YAML object in more than one write),
				// so both are read until they agree, and compared then.
				same := func() bool {
					if p.table {
						return slices.Equal(withoutAge(p.kout.String()), withoutAge(p.rout.String()))
					}
					return p.kout.String() == p.rout.String()
				}
				printed := waitFor(60*time.Second, func() bool {
					if p.named {
						return strings.Contains(p.kout.String(), "changed") || strings.Count(p.kout.String(), "\n") >= 3
					}
					return strings.Contains(p.kout.String(), name("c")) && strings.Contains(p.rout.String(), name("c"))
				})
				require.True(t, printed, "%s", describe(p))
				// kubectl has begun printing the last change; rewatch, which saw it at the same
				// time, too. When they never agree, the comparison below shows how they differ.
				waitFor(10*time.Second, same)
				if p.table {
					require.Equal(t, withoutAge(p.kout.String()), withoutAge(p.rout.String()), "%s", describe(p))
				} else {
					require.Equal(t, p.kout.String(), p.rout.String(), "%s", describe(p))
				}
				require.Empty(t, p.kerr.String(), "kubectl's stderr")
			}
			for _, p := range pairs {
				require.NoError(t, p.rcmd.Process.Signal(syscall.SIGINT))
				require.NoError(t, p.rcmd.Wait(), "%s", describe(p))
			}
			if !res.namespaced {
				for _, n := range []string{"a", "c"} {
					if err := res.delete(context.Background(), cs, "", name(n)); err != nil && !apierrors.IsNotFound(err) {
						t.Logf("cleanup: %v", err)
					}
				}
			}
			t.Logf("%s: %d outputs × watch, watch-only, %d more print flags, -A and a named object: the same rows and cells but AGE", res.arg, len(sideBySideOutputs), len(sideBySideExtras))
		})
	}
}

// What the server refuses before the first sync, and what the command line gets wrong, end
// `rewatch watch` as they end `kubectl get -w`: the same message on stderr, the same exit
// status (docs/cli.md, "Exit status") — a label selector the server cannot parse (400), a user
// RBAC does not let list (403), a named object that is not there (404), a resource type
// discovery does not know, an unknown flag.
func TestCLIWatchRefusalsAsKubectl(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 1)
	kubectl := kubectlBin(t)
	bin := buildCLI(t)
	kp := plainProxy(t, b)
	kubeconfig := proxyKubeconfig(t, kp.URL())
	for _, args := range [][]string{
		{"configmaps", "-n", e.ns, "-l", "a b=c"},
		{"configmaps", "-n", e.ns, "--as", "nobody"},
		{"configmaps", "nosuch", "-n", e.ns},
		{"deployments.apps/nosuch", "-n", e.ns, "-o", "name"},
		{"configmapz", "-n", e.ns},
		{"configmaps", "-n", e.ns, "--bogus"},
		{"configmaps", "-n", e.ns, "-o", "xml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var kout, kerr, rout, rerr syncbuf.Buffer
			kcmd := exec.CommandContext(ctx, kubectl, append([]string{"get", "-w", "--kubeconfig", kubeconfig}, args...)...)
			kcmd.Stdout, kcmd.Stderr = &kout, &kerr
			kexit := kcmd.Run()
			rcmd := exec.CommandContext(ctx, bin, append([]string{"watch", "--trace=none", "--kubeconfig", kubeconfig}, args...)...)
			rcmd.Stdout, rcmd.Stderr = &rout, &rerr
			rexit := rcmd.Run()
			require.NoError(t, ctx.Err(), "a command did not end by itself")
			var kx, rx *exec.ExitError
			require.ErrorAs(t, kexit, &kx, "kubectl: %s", kerr.String())
			require.ErrorAs(t, rexit, &rx, "rewatch: %s", rerr.String())
			require.Equal(t, kx.ExitCode(), rx.ExitCode(), "exit status")
			want := strings.ReplaceAll(kerr.String(), "kubectl get", "rewatch watch")
			require.Equal(t, want, rerr.String())
			require.Equal(t, kout.String(), rout.String())
		})
	}
}
