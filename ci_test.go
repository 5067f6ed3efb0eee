package ratekit_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// .ci/servers.sh takes the Debian mirror from the machine's apt sources,
// as apt reads them (the files apt-config names, one-line .list and
// deb822 .sources), or from RATEKIT_DEBIAN_MIRROR. Each case runs the
// script with APT_CONFIG pointing apt at fake sources whose mirror is a
// local HTTP server that answers 404: the script fails at apt-get update,
// after asking that server (and only it) for the three releases' indexes.
func TestServersScriptTakesTheMirrorFromApt(t *testing.T) {
	codename := debianCodename(t)
	for _, tool := range []string{"bash", "apt-config", "apt-get", "dpkg", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: .ci/servers.sh needs a Debian system", tool)
		}
	}
	if _, err := os.Stat("/usr/share/keyrings/debian-archive-keyring.gpg"); err != nil {
		t.Skip("no debian-archive-keyring: .ci/servers.sh needs it")
	}
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	u := srv.URL
	c := codename
	for _, tc := range []struct {
		name     string
		list     string            // the main sources.list
		parts    map[string]string // files of sources.list.d
		override string            // RATEKIT_DEBIAN_MIRROR
		want     string            // the mirror's path on srv; "" for none found
	}{
		{
			name: "deb822",
			parts: map[string]string{
				// Read in name order: the first entry of the host's
				// release with main is the archive.
				"000-third-party.list": "deb [arch=amd64 signed-by=/k.gpg] " + u + "/docker " + c + " stable\n",
				"debian.sources": "# a comment\n" +
					"Types: deb\nURIs: " + u + "/debian-security\nSuites: " + c + "-security\nComponents: main\n\n" +
					"Types: deb\nURIs: " + u + "/disabled\nSuites: " + c + "\nComponents: main\nEnabled: no\n\n\n" +
					"Types: deb-src\nURIs: " + u + "/src\nSuites: " + c + "\nComponents: main\n\n" +
					"types: deb deb-src\n# a comment in a stanza\nuris: " + u + "/debian\n  " + u + "/second\n" +
					"Suites:\n " + c + "\n " + c + "-updates\nComponents: contrib main\n" +
					"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
				"aaa.sources.disabled": "Types: deb\nURIs: " + u + "/ignored\nSuites: " + c + "\nComponents: main\n",
				"bad name.list":        "deb " + u + "/ignored " + c + " main\n",
			},
			want: "/debian",
		},
		{
			name: "one-line",
			list: "# deb " + u + "/commented " + c + " main\n" +
				"deb-src " + u + "/src " + c + " main\n" +
				"deb " + u + "/debian-security " + c + "-security main\n" +
				"deb [ arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg ] " + u + "/mirror/debian/ " + c + " main contrib # a comment\n",
			parts: map[string]string{"later.sources": "Types: deb\nURIs: " + u + "/later\nSuites: " + c + "\nComponents: main\n"},
			want:  "/mirror/debian",
		},
		{
			name:     "RATEKIT_DEBIAN_MIRROR",
			list:     "deb " + u + "/debian " + c + " main\n",
			override: u + "/override",
			want:     "/override",
		},
		{
			name: "none",
			list: "deb " + u + "/debian-security " + c + "-security main\ndeb " + u + "/other " + c + " stable\n",
			want: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			paths = nil
			mu.Unlock()
			etc := t.TempDir()
			if tc.list != "" {
				writeFile(t, filepath.Join(etc, "sources.list"), tc.list)
			}
			if err := os.Mkdir(filepath.Join(etc, "sources.list.d"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, text := range tc.parts {
				writeFile(t, filepath.Join(etc, "sources.list.d", name), text)
			}
			conf := filepath.Join(etc, "apt.conf")
			writeFile(t, conf, `Dir::Etc::SourceList "`+etc+`/sources.list"; Dir::Etc::SourceParts "`+etc+`/sources.list.d/";`)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", ".ci/servers.sh", filepath.Join(etc, "servers"))
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
				return strings.HasPrefix(e, "RATEKIT_DEBIAN_MIRROR=") || strings.HasPrefix(e, "APT_CONFIG=")
			}), "APT_CONFIG="+conf)
			if tc.override != "" {
				cmd.Env = append(cmd.Env, "RATEKIT_DEBIAN_MIRROR="+tc.override)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatalf(".ci/servers.sh succeeded against a mirror that answers 404:\n%s", stderr.String())
			}
			mu.Lock()
			got := slices.Clone(paths)
			mu.Unlock()
			if tc.want == "" {
				if len(got) > 0 || !strings.Contains(stderr.String(), "RATEKIT_DEBIAN_MIRROR") {
					t.Fatalf("no Debian archive in the sources: asked %q; stderr (want it to name RATEKIT_DEBIAN_MIRROR):\n%s", got, stderr.String())
				}
				return
			}
			for _, release := range []string{"bullseye", "bookworm", "trixie"} {
				if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, tc.want+"/dists/"+release+"/") }) {
					t.Errorf("no request for %s under %s; asked:\n%s\nstderr:\n%s", release, tc.want, strings.Join(got, "\n"), stderr.String())
				}
			}
			for _, p := range got {
				if !strings.HasPrefix(p, tc.want+"/") {
					t.Errorf("asked %s, not under the mirror %s", p, tc.want)
				}
			}
			if !strings.Contains(stderr.String(), u+tc.want) {
				t.Errorf("stderr does not name the mirror %s:\n%s", u+tc.want, stderr.String())
			}
		})
	}
}

// debianCodename returns the machine's Debian release (VERSION_CODENAME
// of /etc/os-release), or skips t on another system.
func debianCodename(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/etc/os-release")
	if err != nil {
		t.Skipf("not a Debian system: %v", err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = strings.Trim(v, `"'`)
		}
	}
	if vars["ID"] != "debian" || vars["VERSION_CODENAME"] == "" {
		t.Skipf("not a Debian system (ID %q, VERSION_CODENAME %q)", vars["ID"], vars["VERSION_CODENAME"])
	}
	return vars["VERSION_CODENAME"]
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
