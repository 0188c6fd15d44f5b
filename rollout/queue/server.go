package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ServerOptions configure an embedded JetStream server.
type ServerOptions struct {
	// Addr is host:port to listen on; port 0 picks a free one.
	Addr string
	// StoreDir holds the streams (file storage), so that a restarted
	// server resumes where it stopped.
	StoreDir string
	// MaxPayload bounds one message (default 8 MiB); records larger than a
	// quarter of it are compressed.
	MaxPayload int32
	// Log turns on the server's own log lines (stderr).
	Log bool
	// Auth, when set, is required of every client.
	Auth Auth
}

// Auth is how clients authenticate to the NATS server: a token, or a user
// and password. It is read from the environment (AuthFromEnv) and never
// written to a file, a manifest, a run configuration or a log.
type Auth struct {
	Token, User, Password string
}

// Set reports whether any credential is given.
func (a Auth) Set() bool { return a.Token != "" || a.User != "" }

// String never shows a credential.
func (a Auth) String() string {
	switch {
	case a.User != "":
		return "user/password"
	case a.Token != "":
		return "token"
	}
	return "none"
}

// AuthFromEnv reads the credential held by the environment variable name:
// "USER:PASSWORD", or a token (which then holds no ':'). An empty name
// means no authentication; a named variable that is unset or empty is an
// error, so that a typo does not silently run an open server.
func AuthFromEnv(name string) (Auth, error) {
	if name == "" {
		return Auth{}, nil
	}
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return Auth{}, fmt.Errorf("queue: --auth-env: the environment variable %s is unset or empty", name)
	}
	if user, pass, ok := strings.Cut(v, ":"); ok {
		if user == "" || pass == "" {
			return Auth{}, fmt.Errorf("queue: --auth-env: %s holds USER:PASSWORD with an empty part", name)
		}
		return Auth{User: user, Password: pass}, nil
	}
	return Auth{Token: v}, nil
}

// OpenToOthers reports whether addr listens beyond this machine (not a
// loopback address): without Auth, anyone who reaches it can read runs and
// publish to them.
func OpenToOthers(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// Server is an embedded NATS server with JetStream.
type Server struct{ *server.Server }

// StartServer starts an embedded NATS server with JetStream on file
// storage and waits until it accepts connections.
func StartServer(o ServerOptions) (*Server, error) {
	host, port := "127.0.0.1", 4222
	if o.Addr != "" {
		h, p, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("queue: --addr %q: %w", o.Addr, err)
		}
		if port, err = strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("queue: --addr %q: invalid port", o.Addr)
		}
		if h != "" {
			host = h
		}
	}
	if o.StoreDir == "" {
		return nil, errors.New("queue: the embedded server needs a store folder")
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = 8 << 20
	}
	opts := &server.Options{
		ServerName: "antidrift-queue",
		Host:       host, Port: port,
		JetStream: true, StoreDir: o.StoreDir,
		MaxPayload: o.MaxPayload,
		NoSigs:     true,
		NoLog:      !o.Log,
	}
	switch {
	case o.Auth.User != "":
		opts.Username, opts.Password = o.Auth.User, o.Auth.Password
	case o.Auth.Token != "":
		opts.Authorization = o.Auth.Token
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if o.Log {
		s.ConfigureLogger()
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("queue: embedded NATS server on %s:%d did not become ready (port in use?)", host, port)
	}
	return &Server{s}, nil
}

// URL is the server's client URL (nats://host:port).
func (s *Server) URL() string { return s.ClientURL() }

// Stop shuts the server down and waits until it has.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}

// Connect dials the NATS server at url and checks that it has JetStream.
// It fails fast (a few seconds) when the server cannot be reached; once
// connected, the connection reconnects for as long as it takes (a server
// restarting from its file store).
func Connect(ctx context.Context, url, name string) (*nats.Conn, jetstream.JetStream, error) {
	return ConnectAuth(ctx, url, name, Auth{})
}

// ConnectAuth is Connect presenting auth (credentials in the URL work too).
func ConnectAuth(ctx context.Context, url, name string, auth Auth) (*nats.Conn, jetstream.JetStream, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(3 * time.Second),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(-1), // publishes fail while disconnected, and are retried
	}
	switch {
	case auth.User != "":
		opts = append(opts, nats.UserInfo(auth.User, auth.Password))
	case auth.Token != "":
		opts = append(opts, nats.Token(auth.Token))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return nil, nil, fmt.Errorf("queue: %s refused the credentials (%s): check --auth-env", secret.URL(url), auth)
		}
		return nil, nil, fmt.Errorf("%w: cannot connect to %s: %v (start one with `antidrift queue serve`, or check the URL)", ErrUnreachable, secret.URL(url), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("queue: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		nc.Close()
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return nil, nil, fmt.Errorf("queue: the NATS server at %s has no JetStream (start nats-server with -js, or use `antidrift queue serve`)", secret.URL(url))
		}
		return nil, nil, fmt.Errorf("queue: JetStream at %s does not answer: %w", secret.URL(url), err)
	}
	return nc, js, nil
}
