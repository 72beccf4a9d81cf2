package store

// GORM rows: the tables of docs/schema.md, which describes every column.
// Column sizes are part of the schema: VARCHAR(64) IDs, VARCHAR(256) conversation IDs, utf8mb4.

type userRow struct {
	ID string `gorm:"column:id;type:varchar(64);primaryKey"`
	// IDNorm is NormalizeUserID(ID), unique: "Alice" and "alice" cannot
	// both register. NULL only for accounts that predate migration 5 and
	// clash with an older one (docs/schema.md).
	IDNorm       *string `gorm:"column:id_norm;type:varchar(64);uniqueIndex:uk_users_id_norm"`
	Nickname     string  `gorm:"column:nickname;type:varchar(128);not null;default:''"`
	Avatar       string  `gorm:"column:avatar;type:varchar(512);not null;default:''"`
	PasswordHash string  `gorm:"column:password_hash;type:varchar(255);not null;default:''"`
	Extra        *string `gorm:"column:extra;type:json"`
	// DisabledAt is when the server API disabled the user (Unix ms); 0 = enabled.
	DisabledAt int64 `gorm:"column:disabled_at;not null;default:0"`
	// GroupInvites is domain.GroupInvites: who may add the user to groups;
	// added by migration 7.
	GroupInvites string `gorm:"column:group_invites;type:varchar(16);not null;default:'everyone'"`
	// DMPolicy is domain.DMPolicy: who may write to the user in a single
	// chat; added by migration 9.
	DMPolicy  string `gorm:"column:dm_policy;type:varchar(16);not null;default:'everyone'"`
	CreatedAt int64  `gorm:"column:created_at;not null;autoCreateTime:false;index:idx_created_at"`
	UpdatedAt int64  `gorm:"column:updated_at;not null;autoUpdateTime:false"`
}

func (userRow) TableName() string { return "users" }

type groupRow struct {
	ID            string  `gorm:"column:id;type:varchar(64);primaryKey"`
	Name          string  `gorm:"column:name;type:varchar(128);not null"`
	Introduction  string  `gorm:"column:introduction;type:varchar(512);not null;default:''"`
	Avatar        string  `gorm:"column:avatar;type:varchar(512);not null;default:''"`
	Extra         *string `gorm:"column:extra;type:json"`
	Status        int     `gorm:"column:status;not null;default:0;index:idx_status"`
	CreatorUserID string  `gorm:"column:creator_user_id;type:varchar(64);not null;index:idx_creator"`
	OwnerUserID   string  `gorm:"column:owner_user_id;type:varchar(64);not null;default:''"`
	GroupType     int     `gorm:"column:group_type;not null;default:0"`
	JoinPolicy    string  `gorm:"column:join_policy;type:varchar(16);not null;default:'open'"`
	// InvitePermission is "members", "admins" or '' (the server's
	// group.invite_permission); added by migration 6.
	InvitePermission string `gorm:"column:invite_permission;type:varchar(16);not null;default:''"`
	// Muted: only the owner and admins may send; added by migration 10.
	Muted     bool  `gorm:"column:muted;not null;default:false"`
	CreatedAt int64 `gorm:"column:created_at;not null;autoCreateTime:false"`
	UpdatedAt int64 `gorm:"column:updated_at;not null;autoUpdateTime:false"`
}

func (groupRow) TableName() string { return "groups" }

// groupRequestRow is a join application of an approval group (migration
// 6), one row per group and user: applying again reuses it.
type groupRequestRow struct {
	ID            int64  `gorm:"column:id;primaryKey;autoIncrement"`
	GroupID       string `gorm:"column:group_id;type:varchar(64);not null;uniqueIndex:uk_group_req_user,priority:1;index:idx_group_req_status,priority:1"`
	UserID        string `gorm:"column:user_id;type:varchar(64);not null;uniqueIndex:uk_group_req_user,priority:2"`
	ReqMsg        string `gorm:"column:req_msg;type:varchar(255);not null;default:''"`
	HandleResult  int    `gorm:"column:handle_result;not null;default:0;index:idx_group_req_status,priority:2"`
	HandlerUserID string `gorm:"column:handler_user_id;type:varchar(64);not null;default:''"`
	HandledAt     int64  `gorm:"column:handled_at;not null;default:0"`
	CreatedAt     int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
	UpdatedAt     int64  `gorm:"column:updated_at;not null;autoUpdateTime:false"`
}

func (groupRequestRow) TableName() string { return "group_requests" }

type groupMemberRow struct {
	ID            int64   `gorm:"column:id;primaryKey;autoIncrement"`
	GroupID       string  `gorm:"column:group_id;type:varchar(64);not null;uniqueIndex:uk_group_user,priority:1;index:idx_group_status,priority:1"`
	UserID        string  `gorm:"column:user_id;type:varchar(64);not null;uniqueIndex:uk_group_user,priority:2;index:idx_user_id"`
	GroupNickname string  `gorm:"column:group_nickname;type:varchar(128);not null;default:''"`
	GroupAvatar   string  `gorm:"column:group_avatar;type:varchar(512);not null;default:''"`
	Extra         *string `gorm:"column:extra;type:json"`
	RoleLevel     int     `gorm:"column:role_level;not null;default:0"`
	Status        int     `gorm:"column:status;not null;default:0;index:idx_group_status,priority:2"`
	JoinedAt      int64   `gorm:"column:joined_at;not null"`
	JoinSeq       int64   `gorm:"column:join_seq;not null;default:0"`
	InviterUserID string  `gorm:"column:inviter_user_id;type:varchar(64);not null;default:''"`
	// MuteUntil is when the member's mute ends (Unix ms, 0 = none); added
	// by migration 10.
	MuteUntil int64 `gorm:"column:mute_until;not null;default:0"`
	CreatedAt int64 `gorm:"column:created_at;not null;autoCreateTime:false"`
	UpdatedAt int64 `gorm:"column:updated_at;not null;autoUpdateTime:false"`
}

func (groupMemberRow) TableName() string { return "group_members" }

type conversationRow struct {
	ID               int64   `gorm:"column:id;primaryKey;autoIncrement"`
	ConversationID   string  `gorm:"column:conversation_id;type:varchar(256);not null;uniqueIndex:uk_owner_conv,priority:2"`
	OwnerID          string  `gorm:"column:owner_id;type:varchar(64);not null;uniqueIndex:uk_owner_conv,priority:1;index:idx_owner"`
	ConversationType int     `gorm:"column:conversation_type;not null;index:idx_conv_type"`
	PeerUserID       string  `gorm:"column:peer_user_id;type:varchar(64);not null;default:''"`
	GroupID          string  `gorm:"column:group_id;type:varchar(64);not null;default:''"`
	RecvMsgOpt       int     `gorm:"column:recv_msg_opt;not null;default:0"`
	IsPinned         bool    `gorm:"column:is_pinned;not null;default:false"`
	Extra            *string `gorm:"column:extra;type:json"`
	CreatedAt        int64   `gorm:"column:created_at;not null;autoCreateTime:false"`
	UpdatedAt        int64   `gorm:"column:updated_at;not null;autoUpdateTime:false"`
	// HiddenSeq (migration 3): the owner deleted the conversation when it
	// reached this seq; it stays out of the list until a message above it.
	// 0 = never deleted.
	HiddenSeq int64 `gorm:"column:hidden_seq;not null;default:0"`
	// ClearedSeq (migration 15): the owner cleared the history up to this
	// seq (POST /conversation/clear); their pulls serve nothing at or
	// below it. 0 = never cleared.
	ClearedSeq int64 `gorm:"column:cleared_seq;not null;default:0"`
}

func (conversationRow) TableName() string { return "conversations" }

// seqConversationRow: MaxSeq is the highest *saved* seq; ReservedSeq is the
// ceiling of seq blocks leased to the Redis allocator (every seq ever issued
// is <= ReservedSeq, so allocation resumes above it after Redis loses data).
type seqConversationRow struct {
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);primaryKey"`
	MaxSeq         int64  `gorm:"column:max_seq;not null;default:0"`
	MinSeq         int64  `gorm:"column:min_seq;not null;default:0"`
	ReservedSeq    int64  `gorm:"column:reserved_seq;not null;default:0"`
	// LatestSendAt (migration 3) is the send_at of the newest saved
	// message, the order of the conversation list.
	LatestSendAt int64 `gorm:"column:latest_send_at;not null;default:0"`
}

func (seqConversationRow) TableName() string { return "seq_conversations" }

// seqUserRow is a member's cursor: MinSeq/MaxSeq bound visibility (MaxSeq 0 =
// unbounded), DeliveredSeq and ReadSeq only move forward.
type seqUserRow struct {
	ID             int64  `gorm:"column:id;primaryKey;autoIncrement"`
	UserID         string `gorm:"column:user_id;type:varchar(64);not null;uniqueIndex:uk_user_conv,priority:1;index:idx_user"`
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);not null;uniqueIndex:uk_user_conv,priority:2"`
	MinSeq         int64  `gorm:"column:min_seq;not null;default:0"`
	MaxSeq         int64  `gorm:"column:max_seq;not null;default:0"`
	ReadSeq        int64  `gorm:"column:read_seq;not null;default:0"`
	DeliveredSeq   int64  `gorm:"column:delivered_seq;not null;default:0"`
}

func (seqUserRow) TableName() string { return "seq_users" }

// Message status codes stored in messages.status.
const (
	msgStatusNormal  = 0
	msgStatusRevoked = 1
	msgStatusFailed  = 2
	msgStatusDeleted = 3
)

type messageRow struct {
	ID             int64   `gorm:"column:id;primaryKey;autoIncrement"`
	ConversationID string  `gorm:"column:conversation_id;type:varchar(256);not null;uniqueIndex:uk_conv_seq,priority:1"`
	Seq            int64   `gorm:"column:seq;not null;uniqueIndex:uk_conv_seq,priority:2"`
	ClientMsgID    string  `gorm:"column:client_msg_id;type:varchar(64);not null;uniqueIndex:uk_sender_client_msg,priority:2"`
	ServerMsgID    string  `gorm:"column:server_msg_id;type:varchar(64);not null;uniqueIndex:uk_server_msg_id"`
	SenderID       string  `gorm:"column:sender_id;type:varchar(64);not null;uniqueIndex:uk_sender_client_msg,priority:1;index:idx_sender"`
	RecvID         string  `gorm:"column:recv_id;type:varchar(64);not null;default:''"`
	GroupID        string  `gorm:"column:group_id;type:varchar(64);not null;default:''"`
	SessionType    int     `gorm:"column:session_type;not null"`
	MsgType        int     `gorm:"column:msg_type;not null"`
	ContentText    *string `gorm:"column:content_text;type:text"`
	ContentImage   string  `gorm:"column:content_image;type:varchar(512);not null;default:''"`
	ContentVideo   string  `gorm:"column:content_video;type:varchar(512);not null;default:''"`
	ContentAudio   string  `gorm:"column:content_audio;type:varchar(512);not null;default:''"`
	ContentFile    string  `gorm:"column:content_file;type:varchar(512);not null;default:''"`
	ContentCustom  *string `gorm:"column:content_custom;type:json"`
	AtUserIDs      *string `gorm:"column:at_user_ids;type:json"`
	Status         int     `gorm:"column:status;not null;default:0"`
	// Extra holds {"quote": {...}}, a quoted reply's snapshot (actions.go).
	Extra     *string `gorm:"column:extra;type:json"`
	SendAt    int64   `gorm:"column:send_at;not null;index:idx_send_at"`
	CreatedAt int64   `gorm:"column:created_at;not null;autoCreateTime:false"`
	UpdatedAt int64   `gorm:"column:updated_at;not null;autoUpdateTime:false"`
	// EditedAt and EditVersion (migration 12): the latest edit's time and
	// number, 0 when never edited.
	EditedAt    int64 `gorm:"column:edited_at;not null;default:0"`
	EditVersion int   `gorm:"column:edit_version;not null;default:0"`
}

func (messageRow) TableName() string { return "messages" }

// mentionRow (migration 3) is one @-mention of a saved message: UserID is
// the mentioned member or "all". It drives unread_mention_count.
type mentionRow struct {
	UserID         string `gorm:"column:user_id;type:varchar(64);primaryKey"`
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);primaryKey"`
	Seq            int64  `gorm:"column:seq;primaryKey;autoIncrement:false"`
	SenderID       string `gorm:"column:sender_id;type:varchar(64);not null"`
}

func (mentionRow) TableName() string { return "message_mentions" }

// revokeIntentRow (migration 3) is a recall of a seq whose message was not
// saved yet; SaveBatch applies it when the message arrives (see revokes.go).
type revokeIntentRow struct {
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);primaryKey"`
	Seq            int64  `gorm:"column:seq;primaryKey;autoIncrement:false"`
	RevokerID      string `gorm:"column:revoker_id;type:varchar(64);primaryKey"`
	AnySender      bool   `gorm:"column:any_sender;not null;default:false"`
	MinSendAt      int64  `gorm:"column:min_send_at;not null;default:0"`
	CreatedAt      int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
}

func (revokeIntentRow) TableName() string { return "message_revokes" }

// allModels lists every table of migration 1, in creation order.
func allModels() []any {
	return []any{
		&userRow{}, &groupRow{}, &groupMemberRow{}, &conversationRow{},
		&seqConversationRow{}, &seqUserRow{}, &messageRow{},
	}
}
