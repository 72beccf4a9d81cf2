package push

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/nexo-im/nexo/configs"
)

// fcmScope is the OAuth scope of the FCM HTTP v1 API.
const fcmScope = "https://www.googleapis.com/auth/firebase.messaging"

// FCM sends through the FCM HTTP v1 API
// (POST {endpoint}/v1/projects/{project}/messages:send) with an OAuth
// access token of the service account (golang.org/x/oauth2/google, which
// signs the JWT grant and caches and refreshes the token; the token URL
// is the key file's token_uri). The Firebase Admin SDK is not used: its
// messaging endpoint cannot be configured, and tests point this one at a
// local receiver.
type FCM struct {
	endpoint string
	project  string
	client   *http.Client
}

// NewFCM reads the service account key of cfg; client carries the
// requests (nil: http.DefaultClient) and its transport is wrapped to add
// the access token.
func NewFCM(ctx context.Context, cfg configs.PushFCM, client *http.Client) (*FCM, error) {
	key, err := os.ReadFile(cfg.CredentialsFile)
	if err != nil {
		return nil, fmt.Errorf("push.fcm.credentials_file: %w", err)
	}
	if client == nil {
		client = http.DefaultClient
	}
	// The token fetch uses the same client (tests: a local token endpoint).
	ctx = context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, client)
	creds, err := google.CredentialsFromJSONWithType(ctx, key, google.ServiceAccount, fcmScope)
	if err != nil {
		return nil, fmt.Errorf("push.fcm.credentials_file: %w", err)
	}
	project := cfg.ProjectID
	if project == "" {
		project = creds.ProjectID
	}
	if project == "" {
		return nil, fmt.Errorf("push.fcm: the key names no project_id; set push.fcm.project_id")
	}
	hc := &http.Client{Timeout: client.Timeout, Transport: &oauth2.Transport{Source: creds.TokenSource, Base: client.Transport}}
	return &FCM{endpoint: strings.TrimRight(cfg.Endpoint, "/"), project: project, client: hc}, nil
}

// fcmRequest is the v1 send body.
type fcmRequest struct {
	Message fcmMessage `json:"message"`
}

type fcmMessage struct {
	Token        string            `json:"token"`
	Notification *fcmNotification  `json:"notification,omitempty"`
	Data         map[string]string `json:"data"`
	Android      fcmAndroid        `json:"android"`
	APNs         *fcmAPNs          `json:"apns,omitempty"`
}

type fcmNotification struct {
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
}

type fcmAndroid struct {
	CollapseKey  string               `json:"collapse_key,omitempty"`
	Priority     string               `json:"priority"`
	Notification *fcmAndroidNotifView `json:"notification,omitempty"`
}

type fcmAndroidNotifView struct {
	Tag   string `json:"tag,omitempty"`
	Count int64  `json:"notification_count"`
}

type fcmAPNs struct {
	Payload map[string]any `json:"payload"`
}

// fcmBody builds the v1 message: a notification message (title, body,
// tag and collapse_key per conversation, the badge) for a new message, a
// data-only message for a recall's silent update. Data always carries the
// Notification's fields as strings.
func fcmBody(token string, n Notification) fcmRequest {
	data := map[string]string{
		"kind": n.Kind, "conversation_id": n.ConversationID, "session_type": strconv.Itoa(n.SessionType),
		"server_msg_id": n.ServerMsgID, "seq": strconv.FormatInt(n.Seq, 10), "badge": strconv.FormatInt(n.Badge, 10),
	}
	if n.GroupID != "" {
		data["group_id"] = n.GroupID
	}
	if n.SenderID != "" {
		data["sender_id"] = n.SenderID
	}
	m := fcmMessage{Token: token, Data: data, Android: fcmAndroid{CollapseKey: collapseID(n.ConversationID), Priority: "high"}}
	if n.Kind == KindRecall {
		m.Android.Priority = "normal"
		return fcmRequest{Message: m}
	}
	m.Notification = &fcmNotification{Title: n.Title, Body: n.Body}
	m.Android.Notification = &fcmAndroidNotifView{Tag: collapseID(n.ConversationID), Count: n.Badge}
	m.APNs = &fcmAPNs{Payload: map[string]any{"aps": map[string]any{"badge": n.Badge}}}
	return fcmRequest{Message: m}
}

// fcmError is the v1 error body.
type fcmError struct {
	Error struct {
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			ErrorCode string `json:"errorCode"`
		} `json:"details"`
	} `json:"error"`
}

// Send implements Provider. UNREGISTERED (and 404) mean the token is gone.
func (f *FCM) Send(ctx context.Context, d deviceRef, n Notification) error {
	body, err := json.Marshal(fcmBody(d.Token, n))
	if err != nil {
		return &SendError{Reason: "rejected", Detail: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.endpoint+"/v1/projects/"+f.project+"/messages:send", bytes.NewReader(body))
	if err != nil {
		return &SendError{Reason: "rejected", Detail: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return networkError(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var fe fcmError
	_ = json.Unmarshal(raw, &fe)
	gone := resp.StatusCode == http.StatusNotFound
	for _, x := range fe.Error.Details {
		if x.ErrorCode == "UNREGISTERED" {
			gone = true
		}
	}
	return httpError(resp.StatusCode, resp.Header, gone, fe.Error.Status+" "+fe.Error.Message)
}
