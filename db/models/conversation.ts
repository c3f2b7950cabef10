import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

export class Conversation extends Model<InferAttributes<Conversation>, InferCreationAttributes<Conversation>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare workspaceId: number;
  /** The conversation's assistant; null means posting to it is 409 agent_not_available. */
  declare agentId: CreationOptional<number | null>;
  declare channel: CreationOptional<string>;
  declare externalRef: CreationOptional<string | null>;
  /** Internal conversations back stateless /responses runs and are never exposed. */
  declare internal: CreationOptional<boolean>;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    Conversation.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        agentId: DataTypes.BIGINT,
        channel: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
        externalRef: DataTypes.TEXT,
        internal: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'conversations', underscored: true, updatedAt: false },
    );
  }
}

export class Message extends Model<InferAttributes<Message>, InferCreationAttributes<Message>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare conversationId: number;
  declare runId: CreationOptional<number | null>;
  declare role: 'user' | 'assistant';
  declare content: unknown;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    Message.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        conversationId: { type: DataTypes.BIGINT, allowNull: false },
        runId: DataTypes.BIGINT,
        role: { type: DataTypes.TEXT, allowNull: false },
        content: { type: DataTypes.JSONB, allowNull: false },
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'messages', underscored: true, updatedAt: false },
    );
  }
}
