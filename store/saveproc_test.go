package store_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// procCases are one-message batches, saved in this order, of every shape
// the save procedure takes and of those it leaves to the compound
// statement (a mention, a note to oneself), with the recall intents
// recorded before each.
func procCases() []struct {
	name    string
	intents []store.RevokeIntent
	msg     domain.Message
} {
	single := domain.SingleConversationID("ann", "bob")
	group := domain.GroupConversationID("g1")
	const t0 = int64(1_790_000_000_000)
	text := textMsg("bob", "ann", "c1", 1)
	text.AtUserIDs = nil
	text.Content.Text = `héllo 😀 你好 'quoted' "double" back\slash`
	picture := textMsg("ann", "bob", "c2", 2)
	picture.AtUserIDs, picture.MsgType = nil, domain.MsgPicture
	picture.Content = domain.Content{Image: `{"object_id":"o1","width":10}`, Custom: `{"k":"v"}`}
	picture.Quote = &domain.Quote{Seq: 1, SenderID: "bob", MsgType: domain.MsgText, Preview: "héllo"}
	failed := textMsg("bob", "ann", "c3", 3)
	failed.AtUserIDs, failed.Status, failed.Content = nil, domain.StatusFailed, domain.Content{}
	recalled := textMsg("ann", "bob", "c4", 4)
	recalled.AtUserIDs = nil
	mention := textMsg("ann", "bob", "c5", 5)
	self := textMsg("ann", "ann", "c1", 1)
	self.AtUserIDs = nil
	return []struct {
		name    string
		intents []store.RevokeIntent
		msg     domain.Message
	}{
		{"single chat, text beyond latin1", nil, text},
		{"single chat, picture with a quote, the conversation's rows there", nil, picture},
		{"a failed save's placeholder", nil, failed},
		{"recalled before its save", []store.RevokeIntent{{ConversationID: single, Seq: 4, RevokerID: "ann", MinSendAt: 0}}, recalled},
		{"a mention (compound statement)", nil, mention},
		{"a note to oneself (compound statement)", nil, self},
		{"group, an intent of another seq", []store.RevokeIntent{{ConversationID: group, Seq: 9, RevokerID: "x", AnySender: true}},
			msgAt(group, 1, "ann", t0, domain.MsgText)},
		{"group, an admin's intent", []store.RevokeIntent{{ConversationID: group, Seq: 2, RevokerID: "own", AnySender: true}},
			msgAt(group, 2, "bob", t0+1, domain.MsgText)},
		{"group, an intent on a notification", []store.RevokeIntent{{ConversationID: group, Seq: 3, RevokerID: "own", AnySender: true}},
			msgAt(group, 3, "own", t0+2, domain.MsgNotificationMin+1)},
		{"a redelivery (the statement-by-statement path)", nil, text},
	}
}

// TestSaveProcedureSavesWhatTheCompoundStatementSaves: each one-message
// batch saved through the procedure (one database) and through the
// compound statement (another) gets the same result and leaves the same
// rows in every table the save writes, batch after batch.
func TestSaveProcedureSavesWhatTheCompoundStatementSaves(t *testing.T) {
	ctx := context.Background()
	withProc, without := storetest.MySQL(t), storetest.MySQL(t)
	name, err := withProc.SaveProcedure()
	if err != nil || !strings.HasPrefix(name, "nexo_save_message_") {
		t.Fatalf("SaveProcedure() = %q, %v; want one installed on MariaDB", name, err)
	}
	without.WithoutSaveProcedure()
	calls := callCount(t, withProc)
	for _, tc := range procCases() {
		var got [2][]store.SaveResult
		for i, db := range []*store.DB{withProc, without} {
			for _, in := range tc.intents {
				if err := store.NewRevokeRepo(db).Record(ctx, in); err != nil {
					t.Fatal(err)
				}
			}
			res, err := store.NewMessageRepo(db).SaveBatch(ctx, []domain.Message{tc.msg})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			got[i] = res
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("%s: procedure %+v, compound statement %+v", tc.name, got[0], got[1])
		}
		for _, table := range []string{"messages", "seq_conversations", "seq_users", "conversations", "message_mentions"} {
			a, b := tableRows(t, withProc, table), tableRows(t, without, table)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("after %s, %s differs:\nprocedure          %v\ncompound statement %v", tc.name, table, a, b)
			}
		}
	}
	var status int
	if err := withProc.Gorm.Raw("SELECT status FROM messages WHERE client_msg_id = 'c4'").Row().Scan(&status); err != nil || status != 1 {
		t.Errorf("the message recalled before its save: status %d (%v), want 1 (revoked)", status, err)
	}
	// Seven of the ten batches are the procedure's; the global counter
	// also counts other tests' calls, never fewer.
	if n := callCount(t, withProc) - calls; n < 7 {
		t.Errorf("Com_call_procedure rose by %d over the saves, want at least 7", n)
	}
}

// tableRows is table's rows as text, sorted, without the auto-increment
// id and the columns set to the time of the save.
func tableRows(t *testing.T, db *store.DB, table string) [][]string {
	t.Helper()
	rows, err := db.Gorm.Raw("SELECT * FROM " + table).Rows()
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var row []string
		for i, c := range cols {
			if c == "id" || c == "created_at" || table == "messages" && c == "updated_at" { // the clock's, not the save's
				continue
			}
			if b, ok := vals[i].([]byte); ok {
				row = append(row, string(b))
			} else {
				row = append(row, fmt.Sprint(vals[i]))
			}
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], "\x00") < strings.Join(out[j], "\x00") })
	return out
}

func callCount(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var name string
	var n int64
	if err := db.Gorm.Raw("SHOW GLOBAL STATUS LIKE 'Com_call_procedure'").Row().Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDroppedSaveProcedureFallsBack: a procedure dropped under a running
// process costs the batch that finds it gone nothing (it is saved
// statement by statement); later batches send the compound statement, and
// the next Migrate installs it again.
func TestDroppedSaveProcedureFallsBack(t *testing.T) {
	ctx := context.Background()
	db := storetest.MySQL(t)
	name, _ := db.SaveProcedure()
	if name == "" {
		t.Fatal("no save procedure on MariaDB")
	}
	if err := db.Gorm.Exec("DROP PROCEDURE " + name).Error; err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 2; seq++ {
		saveOneMessage(t, db, seq)
		if now, _ := db.SaveProcedure(); now != "" {
			t.Fatalf("after seq %d saves still call %q", seq, now)
		}
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if again, err := db.SaveProcedure(); again != name || err != nil {
		t.Fatalf("after Migrate: %q, %v; want %q again", again, err, name)
	}
}

// TestSaveProcedureNeedsNoPrivilege: a database user without CREATE
// ROUTINE or EXECUTE, on a database an administrator migrated (so the
// procedure is there, not the user's to call), migrates and saves as
// before, through the compound statement, and SaveProcedure says why
// there is no procedure.
func TestSaveProcedureNeedsNoPrivilege(t *testing.T) {
	const tables = "SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP, REFERENCES"
	// The first user cannot see the procedure and fails to create it; the
	// second sees it (CREATE ROUTINE) and fails to call it (no EXECUTE).
	for name, grants := range map[string]string{"tables only": tables, "no EXECUTE": tables + ", CREATE ROUTINE"} {
		t.Run(name, func(t *testing.T) { saveWithoutTheProcedure(t, grants) })
	}
}

func saveWithoutTheProcedure(t *testing.T, grants string) {
	ctx := context.Background()
	dsn := storetest.MySQLDSN(t)
	admin, err := store.OpenMySQL(ctx, configs.MySQL{DSN: dsn, MaxOpenConns: 2, MaxIdleConns: 1, ConnMaxLifetime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	if _, err := admin.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if name, err := admin.SaveProcedure(); name == "" {
		t.Fatalf("the administrator's Migrate installed no procedure: %v", err)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	user := storetest.RandomName("nexo_u")
	for _, q := range []string{
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY 'pw-" + user + "'",
		"GRANT " + grants + " ON `" + cfg.DBName + "`.* TO '" + user + "'@'%'",
	} {
		if err := admin.Gorm.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = admin.Gorm.Exec("DROP USER IF EXISTS '" + user + "'@'%'").Error })
	cfg.User, cfg.Passwd = user, "pw-"+user
	db, err := store.OpenMySQL(ctx, configs.MySQL{DSN: cfg.FormatDSN(), MaxOpenConns: 4, MaxIdleConns: 2, ConnMaxLifetime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate without CREATE ROUTINE: %v", err)
	}
	for seq := int64(1); seq <= 2; seq++ {
		saveOneMessage(t, db, seq)
	}
	if name, err := db.SaveProcedure(); name != "" || err == nil {
		t.Fatalf("SaveProcedure() = %q, %v; want none, and why", name, err)
	}
}

// saveOneMessage saves, as a batch of its own, ann's text to bob at seq —
// a message the save procedure takes (no mention) — and fails the test
// unless it is saved.
func saveOneMessage(t *testing.T, db *store.DB, seq int64) {
	t.Helper()
	m := textMsg("ann", "bob", fmt.Sprint("m", seq), seq)
	m.AtUserIDs = nil
	res, err := store.NewMessageRepo(db).SaveBatch(context.Background(), []domain.Message{m})
	if err != nil || res[0].Outcome != store.Saved {
		t.Fatalf("seq %d: %+v, %v", seq, res, err)
	}
}
